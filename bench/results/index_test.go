package results

import (
	"bufio"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// link matches a markdown link or image, [text](target) or ![alt](target "title"), and
// captures the target.
var link = regexp.MustCompile(`(!?)\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

type mdLink struct {
	image  bool
	target string
}

func links(t *testing.T, file string) []mdLink {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []mdLink
	for _, m := range link.FindAllStringSubmatch(string(b), -1) {
		out = append(out, mdLink{image: m[1] == "!", target: m[2]})
	}
	return out
}

// local reports the file a link points to, relative to the linking file's directory, and
// whether it is a local file at all (not a URL or an anchor within the page).
func local(target string) (string, bool) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path == "" {
		return "", false
	}
	return u.Path, true
}

// pages are the markdown files under this directory.
func pages(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestEveryResultIsIndexed(t *testing.T) {
	indexed := map[string]bool{}
	for _, l := range links(t, "README.md") {
		if p, ok := local(l.target); ok {
			indexed[strings.SplitN(path.Clean(p), "/", 2)[0]] = true
		}
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == "README.md" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".go") {
			continue
		}
		if !indexed[name] {
			t.Errorf("%s is not linked from README.md: give it a row in the index, or delete it if a later run superseded it", name)
		}
	}
}

func TestLinksResolve(t *testing.T) {
	files := append(pages(t), filepath.Join("..", "..", "docs", "benchmarks.md"))
	for _, file := range files {
		for _, l := range links(t, file) {
			p, ok := local(l.target)
			if !ok {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), filepath.FromSlash(p))); err != nil {
				t.Errorf("%s links %s, which does not exist", file, l.target)
			}
		}
	}
	// The repository's README links the headline results.
	for _, l := range links(t, filepath.Join("..", "..", "README.md")) {
		p, ok := local(l.target)
		if !ok || !strings.HasPrefix(path.Clean(p), "bench/results/") {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(p))); err != nil {
			t.Errorf("README.md links %s, which does not exist", l.target)
		}
	}
}

// kept reads the plots .gitignore re-includes: it ignores every PNG, then names the headline
// plots that are committed with "!" patterns relative to this directory.
func kept(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(".gitignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var patterns []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if p, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "!"); ok {
			patterns = append(patterns, strings.TrimPrefix(p, "/"))
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return patterns
}

func TestEmbeddedPlotsAreCommitted(t *testing.T) {
	patterns := kept(t)
	if len(patterns) == 0 {
		t.Fatal(".gitignore names no committed plot")
	}
	for _, pat := range patterns {
		if matches, err := filepath.Glob(filepath.FromSlash(pat)); err != nil || len(matches) == 0 {
			t.Errorf(".gitignore keeps %s, which matches no file", pat)
		}
	}
	for _, file := range pages(t) {
		for _, l := range links(t, file) {
			p, ok := local(l.target)
			if !ok || !l.image {
				continue
			}
			name := path.Join(filepath.ToSlash(filepath.Dir(file)), p)
			if !slices.ContainsFunc(patterns, func(pat string) bool {
				m, _ := path.Match(pat, name)
				return m
			}) {
				t.Errorf("%s embeds %s, which is not committed: name it in the text as make plots draws it, or keep it with a \"!\" line in .gitignore", file, p)
			}
		}
	}
}
