// Package docs holds gatekeeper's reference pages. Its test keeps them navigable: the README
// stays a front door of bounded size, and every relative link of the README and the pages
// leads to a file that exists and, for a page, to a heading it has. The tables of keys,
// metrics and errors are checked against the code by tests beside that code
// (internal/config, cmd/gatekeeper, internal/proxy).
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// maxREADME is the README's budget: what gatekeeper is, how to start, install and point an
// application at it, the commands, how it works and the headline numbers. Reference
// material goes to this directory.
const maxREADME = 16 << 10

func TestREADMESize(t *testing.T) {
	info, err := os.Stat("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxREADME {
		t.Errorf("README.md is %d bytes, over %d: move reference material to docs/", info.Size(), maxREADME)
	}
}

// pages are the files whose links are checked, relative to this directory.
func pages(t *testing.T) []string {
	t.Helper()
	md, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, md...)
}

var (
	// link matches an inline Markdown link or image: [text](target) and ![alt](target).
	link = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	// fence matches a fenced code block, whose text is not Markdown.
	fence = regexp.MustCompile("(?ms)^```.*?^```")
	// heading matches an ATX heading.
	heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// TestRelativeLinks checks that every relative link leads somewhere: the file exists and,
// when the link names a heading of a Markdown file (#anchor), that heading exists.
func TestRelativeLinks(t *testing.T) {
	anchors := map[string]map[string]bool{} // by cleaned path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		a := headingAnchors(string(text))
		anchors[path] = a
		return a
	}
	for _, page := range pages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		body := fence.ReplaceAllString(string(text), "")
		for _, m := range link.FindAllStringSubmatch(body, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Clean(filepath.Join(filepath.Dir(page), file))
			if file == "" {
				path = filepath.Clean(page)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no such file %s", page, target, path)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", page, target, path, anchor)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown text: lower
// case, punctuation dropped, spaces as hyphens, and -1, -2 on repeats.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# Request types\n## Watching it: `gatekeeper top`\n## Metrics\n## Metrics\n```\n# not a heading\n```\n")
	for _, want := range []string{"request-types", "watching-it-gatekeeper-top", "metrics", "metrics-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block made an anchor")
	}
}
