// Command chaos runs the fault-injection suite (package chaos) and writes its results
// table:
//
//	go run ./chaos/cmd/chaos [-out bench/results/chaos/README.md] [-run REGEXP] [-gatekeeper bin/gatekeeper]
//
// It runs `go test -json` on the suite with GK_CHAOS=1, prints each test's output as it
// comes (the "chaos: <check>: <figure>" lines among it), and writes a markdown table of the
// figures with each check's setup and verdict, the command, the date and the machine. It
// exits non-zero when a check fails. make chaos runs it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	out := fs.String("out", "", "write the results table, markdown, to this file")
	pattern := fs.String("run", "", "run only the checks whose test names match this regular expression")
	gatekeeper := fs.String("gatekeeper", "", "the gatekeeper binary to test (default: built from this checkout)")
	timeout := fs.Duration("timeout", 30*time.Minute, "bound on the whole suite")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	testArgs := []string{"test", "-count=1", "-json", "-timeout", timeout.String()}
	if *pattern != "" {
		testArgs = append(testArgs, "-run", *pattern)
	}
	testArgs = append(testArgs, "./chaos")
	cmd := exec.Command(goTool, testArgs...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GK_CHAOS=1")
	if *gatekeeper != "" {
		path, err := filepath.Abs(*gatekeeper) // the tests run in their package's directory
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("-gatekeeper: %w", err)
		}
		cmd.Env = append(cmd.Env, "GK_CHAOS_GATEKEEPER="+path)
	}
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	res := collect(pipe, stdout)
	testErr := cmd.Wait()
	res.duration = time.Since(start)
	fmt.Fprintf(stdout, "chaos: the suite took %s\n", res.duration.Round(time.Second))

	if *out != "" {
		var words []string
		for _, k := range tuning {
			if v, ok := os.LookupEnv(k); ok {
				words = append(words, k+"="+v)
			}
		}
		words = append(words, "go run ./chaos/cmd/chaos")
		for _, a := range args {
			words = append(words, shellQuote(a))
		}
		command := "`" + strings.Join(words, " ") + "`"
		if os.Getenv("MAKELEVEL") != "" {
			command = "`make chaos`, which runs " + command
		}
		var b bytes.Buffer
		writeReport(&b, res, command, time.Now().UTC(), machine(root))
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "chaos: wrote", *out)
	}
	if testErr != nil {
		return fmt.Errorf("the suite failed: %w", testErr)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell where it holds anything but letters, digits and
// -_./:=,+ (a -run pattern's parentheses and bars, say).
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+", r)
	}
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !plain(r) }) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tuning are the environment variables that change what a check measures (see package
// chaos); the command written with the results names those set.
var tuning = []string{"GK_CHAOS_LOSS_RUN", "GK_CHAOS_LOSS_DIRECT"}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it")
		}
		dir = parent
	}
}

// event is one line of `go test -json`.
type event struct {
	Action string
	Test   string
	Output string
}

// line is a "chaos: <check>: <figure>" line and the test that printed it.
type line struct {
	test, check, figure string
}

// results is what a run of the suite said.
type results struct {
	lines []line
	// verdicts are the tests' ends: pass, fail or skip.
	verdicts map[string]string
	// failures are the messages of failed tests, by test.
	failures map[string][]string
	duration time.Duration
}

// collect reads `go test -json` output, echoes each test's output to w, and gathers the
// result lines, the verdicts and the failure messages.
func collect(r io.Reader, w io.Writer) *results {
	res := &results{verdicts: map[string]string{}, failures: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // the build's own output
			continue
		}
		switch e.Action {
		case "output":
			text := e.Output
			if strings.HasPrefix(text, "=== ") {
				continue
			}
			fmt.Fprint(w, text)
			text = strings.TrimRight(text, "\n")
			if rest, ok := strings.CutPrefix(text, "chaos: "); ok && e.Test != "" {
				check, figure, _ := strings.Cut(rest, ": ")
				res.lines = append(res.lines, line{test: e.Test, check: check, figure: figure})
			} else if msg, ok := failureMessage(text); ok && e.Test != "" {
				res.failures[e.Test] = append(res.failures[e.Test], msg)
			}
		case "pass", "fail", "skip":
			if e.Test != "" {
				res.verdicts[e.Test] = e.Action
			}
		}
	}
	return res
}

// failureMessage picks the message out of a test's "    file_test.go:NN: message" line;
// the proxy's log, which a failed test also prints, is left out.
func failureMessage(text string) (string, bool) {
	t := strings.TrimLeft(text, " ")
	if len(t) == len(text) || len(text)-len(t) > 8 {
		return "", false // not a test's message, or a continuation line
	}
	file, msg, ok := strings.Cut(t, ": ")
	if !ok || !strings.Contains(file, "_test.go:") || strings.HasPrefix(msg, "the proxy's log") {
		return "", false
	}
	return msg, true
}

// verdict reads a line's outcome: that of the test that printed it.
func (r *results) verdict(l line) string {
	switch r.verdicts[l.test] {
	case "pass":
		return "pass"
	case "fail":
		return "**FAIL**"
	case "skip":
		if strings.HasPrefix(l.figure, "not applicable") {
			return "not applicable"
		}
		return "not available here"
	}
	return "unfinished"
}
