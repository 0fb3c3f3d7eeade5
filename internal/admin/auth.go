package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// GuardConfig is what a Guard checks callers against.
type GuardConfig struct {
	// Token is the bearer token callers may send as "Authorization: Bearer TOKEN"; empty
	// means none.
	Token []byte
	// Users are user names and the bcrypt hashes of their passwords, for basic
	// authentication. Names are matched in any letter case.
	Users map[string]string
	// ProtectReads asks for credentials on GET and HEAD too, but not on /healthz and
	// /readyz.
	ProtectReads bool
	// Log gets one line per refused request; nil logs nothing.
	Log *slog.Logger
}

// Guard asks callers of the admin API who they are. It wraps the whole handler, so that
// an endpoint added later is covered without a word: every method but GET and HEAD (what
// may change the proxy) needs a bearer token or a user's password, and so do Go's
// profiles, which cost processor time; with ProtectReads every other read does too, except
// /healthz and /readyz, which orchestrators probe without credentials.
type Guard struct {
	token        [sha256.Size]byte // the token's digest, compared in constant time
	hasToken     bool
	users        map[string][]byte // bcrypt hashes by lower-case user name
	unknownUser  []byte            // a hash to check an unknown user's password against
	protectReads bool
	log          *slog.Logger
	// how says what credentials to send, and challenge is the WWW-Authenticate of a 401.
	how       string
	challenge []string
	// checking bounds the bcrypt comparisons running at once: a flood of wrong passwords
	// takes at most this many of the proxy's processors.
	checking chan struct{}
	verified verifiedSet
}

// bcryptSlots is how many passwords are checked at once.
const bcryptSlots = 2

// NewGuard returns a guard that lets through the callers c names. It refuses a config
// with neither a token nor a user, and a password that is not a bcrypt hash.
func NewGuard(c GuardConfig) (*Guard, error) {
	if len(c.Token) == 0 && len(c.Users) == 0 {
		return nil, errors.New("admin authentication needs a bearer token or a user")
	}
	g := &Guard{
		users:        make(map[string][]byte, len(c.Users)),
		protectReads: c.ProtectReads,
		log:          c.Log,
		checking:     make(chan struct{}, bcryptSlots),
		verified:     verifiedSet{seen: map[[sha256.Size]byte]struct{}{}},
	}
	if len(c.Token) > 0 {
		g.token, g.hasToken = sha256.Sum256(c.Token), true
	}
	cost := bcrypt.MinCost
	for name, hash := range c.Users {
		if name == "" || strings.Contains(name, ":") {
			return nil, fmt.Errorf("admin user %q: a user name is not empty and holds no colon", name)
		}
		n, err := bcrypt.Cost([]byte(hash))
		if err != nil {
			return nil, fmt.Errorf("admin user %q: the password is not a bcrypt hash: %w", name, err)
		}
		cost = max(cost, n)
		g.users[strings.ToLower(name)] = []byte(hash)
	}
	if len(g.users) > 0 {
		// An unknown user costs what a known one does, so that the time of a refusal does
		// not tell which users exist.
		var err error
		if g.unknownUser, err = bcrypt.GenerateFromPassword([]byte(rand.Text()), cost); err != nil {
			return nil, err
		}
	}
	switch {
	case g.hasToken && len(g.users) > 0:
		g.how = "send the bearer token of admin.auth.bearer_token_file (Authorization: Bearer TOKEN) or the password of a user of admin.auth.users (basic authentication)"
	case g.hasToken:
		g.how = "send the bearer token of admin.auth.bearer_token_file (Authorization: Bearer TOKEN)"
	default:
		g.how = "send the password of a user of admin.auth.users (basic authentication)"
	}
	if len(g.users) > 0 {
		g.challenge = append(g.challenge, `Basic realm="gatekeeper", charset="UTF-8"`)
	}
	if g.hasToken {
		g.challenge = append(g.challenge, `Bearer realm="gatekeeper"`)
	}
	return g, nil
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		why := g.needs(r)
		if why == "" {
			next.ServeHTTP(w, r)
			return
		}
		switch outcome, user := g.check(r); outcome {
		case granted:
			next.ServeHTTP(w, r)
		case missing:
			g.refuse(w, r, "missing", user, why+": "+g.how)
		default:
			g.refuse(w, r, "wrong", user, "the credentials were refused: "+g.how)
		}
	})
}

// needs returns why r needs credentials, or "" when it does not.
func (g *Guard) needs(r *http.Request) string {
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		return "this endpoint changes the proxy"
	case r.URL.Path == "/healthz" || r.URL.Path == "/readyz":
		return ""
	case strings.HasPrefix(r.URL.Path, "/debug/"):
		return "the profiles cost the proxy processor time"
	case g.protectReads:
		return "this endpoint needs credentials (admin.auth.protect_reads)"
	}
	return ""
}

// outcome is what the credentials of a request came to.
type outcome int

const (
	granted outcome = iota
	missing
	wrong
)

// check returns what r's credentials come to, and the user it names, if any.
func (g *Guard) check(r *http.Request) (outcome, string) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return missing, ""
	}
	scheme, credentials, _ := strings.Cut(header, " ")
	switch {
	case strings.EqualFold(scheme, "Bearer") && g.hasToken:
		got := sha256.Sum256([]byte(strings.TrimSpace(credentials)))
		if subtle.ConstantTimeCompare(got[:], g.token[:]) == 1 {
			return granted, ""
		}
	case strings.EqualFold(scheme, "Basic") && len(g.users) > 0:
		user, password, ok := r.BasicAuth()
		if !ok {
			return wrong, ""
		}
		if g.password(r, user, password) {
			return granted, user
		}
		return wrong, user
	}
	return wrong, ""
}

// password tells whether password is user's. A right password is remembered, so that a
// client polling with it (a scrape, gatekeeper top) costs one bcrypt comparison, not one
// per request.
func (g *Guard) password(r *http.Request, user, password string) bool {
	user = strings.ToLower(user)
	key := sha256.Sum256(append(binary.AppendUvarint(nil, uint64(len(user))), user+password...))
	if g.verified.has(key) {
		return true
	}
	hash, known := g.users[user]
	if !known {
		hash = g.unknownUser
	}
	select {
	case g.checking <- struct{}{}:
	case <-r.Context().Done():
		return false
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	<-g.checking
	if err != nil || !known {
		return false
	}
	g.verified.add(key)
	return true
}

// refuse answers 401 with what to send, and logs the refusal.
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, reason, user, msg string) {
	if g.log != nil {
		g.log.Warn("admin request refused", "reason", reason, "method", r.Method, "path", r.URL.Path,
			"remote", r.RemoteAddr, "user", user)
	}
	for _, c := range g.challenge {
		w.Header().Add("WWW-Authenticate", c)
	}
	writeError(w, http.StatusUnauthorized, msg)
}

// verifiedSet holds digests of the user names and passwords that checked out, up to
// maxVerified of them; past that it starts again empty.
type verifiedSet struct {
	mu   sync.Mutex
	seen map[[sha256.Size]byte]struct{}
}

const maxVerified = 64

func (s *verifiedSet) has(key [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.seen[key]
	return ok
}

func (s *verifiedSet) add(key [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) >= maxVerified {
		clear(s.seen)
	}
	s.seen[key] = struct{}{}
}
