package auth

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// A client's answer is untrusted bytes: Verify never panics on one, and accepts only the
// answer of the right password.
func FuzzVerify(f *testing.F) {
	scramble := []byte(testScramble)
	for _, m := range []string{protocol.NativePassword, protocol.CachingSHA2, protocol.Ed25519} {
		f.Add(m, answer(m, "secret", scramble))
		f.Add(m, answer(m, "wrong", scramble))
	}
	f.Add(protocol.NativePassword, []byte{})
	f.Add(protocol.CachingSHA2, []byte{0})
	f.Add("", []byte("x"))
	acc := accountKinds()
	f.Fuzz(func(t *testing.T, method string, response []byte) {
		for _, u := range []User{acc.clear, acc.empty, acc.hash, acc.key, acc.none} {
			_, err := u.Verify(method, scramble, response)
			if err == nil {
				password := "secret"
				if u.HasPassword {
					password = u.Password
				}
				if !bytes.Equal(response, answer(method, password, scramble)) && !isEmptyAnswer(response) {
					t.Fatalf("%v accepted %x for %s, which is not the answer of its password", u, response, method)
				}
				continue
			}
			if !errors.Is(err, ErrWrongPassword) && !errors.Is(err, ErrMethod) {
				t.Fatalf("%v: Verify = %v, want ErrWrongPassword or ErrMethod", u, err)
			}
		}
	})
}

// Host patterns match as SQL LIKE does, checked against a regular expression.
func FuzzLikeMatch(f *testing.F) {
	f.Add("10.0.0.%", "10.0.0.5")
	f.Add("%.5", "10.0.0.55")
	f.Add(`a\%_b%`, "a%xbyy")
	f.Add("%a%b%", "aXbYab")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 64 || len(s) > 64 {
			return
		}
		// The oracle reads every byte as one Latin-1 rune, so that '.' stands for one byte.
		var re strings.Builder
		re.WriteString(`(?s)^`)
		for i := 0; i < len(pattern); i++ {
			switch c := pattern[i]; {
			case c == '\\' && i+1 < len(pattern):
				i++
				re.WriteString(regexp.QuoteMeta(string(rune(lower(pattern[i])))))
			case c == '%':
				re.WriteString(`.*`)
			case c == '_':
				re.WriteString(`.`)
			default:
				re.WriteString(regexp.QuoteMeta(string(rune(lower(c)))))
			}
		}
		re.WriteString(`$`)
		var text strings.Builder
		for i := 0; i < len(s); i++ {
			text.WriteRune(rune(lower(s[i])))
		}
		want := pattern != "" && regexp.MustCompile(re.String()).MatchString(text.String())
		p := compileHost(pattern)
		if got := len(p.like) > 0 && likeMatch(p.like, s); p.mask == nil && got != want {
			t.Fatalf("%q LIKE %q = %v, want %v", s, pattern, got, want)
		}
	})
}
