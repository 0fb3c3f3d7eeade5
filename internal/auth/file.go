package auth

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FileError is one problem in a users file. Its message, path:line: text, is fit to show
// an operator as is; Line is zero when the problem has no line (the file's mode, an
// unreadable file).
type FileError struct {
	Path string
	Line int
	Msg  string
	// Err is the underlying error (from the file system or the YAML parser), if any.
	Err error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

func (e *FileError) Unwrap() error { return e.Err }

// The keys of a users-file entry.
const (
	keyUser           = "user"
	keyPassword       = "password"
	keyPasswordHash   = "password_hash"
	keyMaxConnections = "max_connections"
	keyConsistency    = "consistency"
)

// Consistencies are the values of an entry's consistency key.
var Consistencies = []string{"strong", "session", "eventual"}

// LoadFile reads a users file (auth.users_file):
//
//	users:
//	  - user: app
//	    password: secret          # or password_hash: "*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9"
//	    max_connections: 0        # 0 = no bound
//	    consistency: session      # reads on replicas; default routing.consistency
//
// The file holds secrets, so it must not be open to group or others (chmod 600). Each
// entry needs a non-empty user and exactly one of password (clear text; "" is the empty
// password) and password_hash (mysql_native_password's *HEX of SHA1(SHA1(password)), as
// in mysql.user). Unknown keys, repeated keys and repeated users are errors. An empty list
// is allowed. Every problem found is reported, each as a *FileError naming the line; more
// than one are joined with errors.Join.
func LoadFile(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fsError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat() // the file opened, not whatever the path names by now
	if err != nil {
		return nil, fsError(path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &FileError{Path: path, Msg: "not a regular file"}
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return nil, &FileError{Path: path, Msg: fmt.Sprintf(
			"mode %04o lets group or others read or write this file of passwords; chmod 600 %s", mode, path)}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fsError(path, err)
	}
	return parseFile(path, data)
}

// fsError reports a file-system error without repeating the path.
func fsError(path string, err error) error {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Op + ": " + pe.Err.Error()
	}
	return &FileError{Path: path, Msg: msg, Err: err}
}

// parseFile decodes the users file data, read from path.
func parseFile(path string, data []byte) (*Users, error) {
	p := fileParser{path: path}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FileError{Path: path, Msg: `the file is empty; write "users: []" for no users`}
		}
		return nil, p.yamlError(err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, p.yamlError(err)
		}
		return nil, p.errorf(&more, "a second YAML document; the file holds one")
	}
	users := p.file(&doc)
	if len(p.errs) == 1 {
		return nil, p.errs[0]
	}
	if len(p.errs) > 1 {
		return nil, errors.Join(p.errs...)
	}
	return NewUsers(users...), nil
}

// fileParser walks the YAML tree of a users file and collects its problems.
type fileParser struct {
	path string
	errs []error
}

func (p *fileParser) errorf(n *yaml.Node, format string, args ...any) error {
	e := &FileError{Path: p.path, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
	p.errs = append(p.errs, e)
	return e
}

// yamlError turns a parser error ("yaml: line 7: did not find expected key") into a
// FileError with its line.
func (p *fileParser) yamlError(err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if line, aerr := strconv.Atoi(num); aerr == nil {
				return &FileError{Path: p.path, Line: line, Msg: "not valid YAML: " + text, Err: err}
			}
		}
	}
	return &FileError{Path: p.path, Msg: "not valid YAML: " + msg, Err: err}
}

// file reads the top level: a mapping with the one key users.
func (p *fileParser) file(doc *yaml.Node) []User {
	top := resolve(doc)
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = resolve(top.Content[0])
	}
	if top.Kind != yaml.MappingNode {
		p.errorf(top, `expected a mapping with the key "users"`)
		return nil
	}
	var list *yaml.Node
	p.mapping(top, func(key, value *yaml.Node) {
		if key.Value != "users" {
			p.errorf(key, `unknown key %q; the file has the one key "users"`, key.Value)
			return
		}
		list = value
	})
	if list == nil {
		if len(p.errs) == 0 {
			p.errorf(top, `no "users" key; write "users: []" for no users`)
		}
		return nil
	}
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return nil // "users:" with nothing after it
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(list, `"users" must be a list of entries ("- user: ...")`)
		return nil
	}
	var users []User
	firstLine := make(map[string]int)
	for _, item := range list.Content {
		u, ok := p.entry(resolve(item))
		if !ok {
			continue
		}
		if first, dup := firstLine[u.Name]; dup {
			p.errorf(item, "user %q is listed twice (lines %d and %d); keep one", u.Name, first, item.Line)
			continue
		}
		firstLine[u.Name] = item.Line
		users = append(users, u)
	}
	return users
}

// entry reads one element of the users list.
func (p *fileParser) entry(n *yaml.Node) (User, bool) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, `an entry of "users" must be a mapping with the keys user and password or password_hash`)
		return User{}, false
	}
	errs := len(p.errs)
	u := User{Host: "%"}
	var userKey, passwordKey, hashKey *yaml.Node
	var hashValue *yaml.Node
	p.mapping(n, func(key, value *yaml.Node) {
		switch key.Value {
		case keyUser:
			userKey = key
			u.Name, _ = p.text(key, value)
		case keyPassword:
			passwordKey = key
			u.Password, u.HasPassword = p.text(key, value)
		case keyPasswordHash:
			hashKey, hashValue = key, value
		case keyMaxConnections:
			u.MaxConnections = p.maxConnections(key, value)
		case keyConsistency:
			if v, ok := p.text(key, value); ok {
				if !slices.Contains(Consistencies, v) {
					p.errorf(value, "consistency %q: must be one of %s", v, strings.Join(Consistencies, ", "))
				}
				u.Consistency = v
			}
		default:
			p.errorf(key, "unknown key %q; an entry has the keys %s, %s, %s, %s and %s",
				key.Value, keyUser, keyPassword, keyPasswordHash, keyMaxConnections, keyConsistency)
		}
	})
	who := "entry"
	if u.Name != "" {
		who = fmt.Sprintf("user %q", u.Name)
	}
	switch {
	case userKey == nil:
		p.errorf(n, "entry has no user; add \"user: <name>\"")
	case u.Name == "":
		p.errorf(userKey, "entry has an empty user name")
	}
	switch {
	case passwordKey != nil && hashKey != nil:
		later := passwordKey
		if hashKey.Line > later.Line {
			later = hashKey
		}
		p.errorf(later, "%s: password and password_hash are exclusive; keep one", who)
	case passwordKey == nil && hashKey == nil:
		p.errorf(n, `%s: no password or password_hash; give one (password: "" for the empty password)`, who)
	case hashKey != nil:
		if text, ok := p.text(hashKey, hashValue); ok {
			stage2, err := parseNativeHash(text)
			if err != nil {
				p.errorf(hashValue, "%s: password_hash %v", who, err)
			}
			u.Stage2 = stage2
		}
	}
	return u, len(p.errs) == errs
}

// mapping calls f on each key of the mapping n, reporting keys that are not plain words
// or that repeat.
func (p *fileParser) mapping(n *yaml.Node, f func(key, value *yaml.Node)) {
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := resolve(n.Content[i]), resolve(n.Content[i+1])
		if key.Kind != yaml.ScalarNode {
			p.errorf(key, "a key must be a plain word")
			continue
		}
		if first, dup := seen[key.Value]; dup {
			p.errorf(key, "key %q repeated (first on line %d)", key.Value, first)
			continue
		}
		seen[key.Value] = key.Line
		f(key, value)
	}
}

// text reads a scalar as the text written, so that a password like 0123 or yes stays as
// typed; ok is false (and a problem recorded) for a missing value, a list or a mapping.
func (p *fileParser) text(key, value *yaml.Node) (string, bool) {
	if value.Kind != yaml.ScalarNode || value.Tag == "!!null" {
		p.errorf(value, "%s must be a string (quote it; \"\" for empty)", key.Value)
		return "", false
	}
	return value.Value, true
}

func (p *fileParser) maxConnections(key, value *yaml.Node) int {
	var n int
	if value.Kind != yaml.ScalarNode || value.Tag != "!!int" || value.Decode(&n) != nil || n < 0 {
		p.errorf(value, "%s must be a whole number, 0 or more (0: no bound)", key.Value)
		return 0
	}
	return n
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// parseNativeHash reads mysql_native_password's stored hash, "*" and 40 hex digits of
// SHA1(SHA1(password)), into its 20 bytes. The error does not repeat the text.
func parseNativeHash(s string) ([]byte, error) {
	if len(s) != 41 || s[0] != '*' {
		return nil, fmt.Errorf(`must be "*" followed by 40 hex digits, as mysql.user stores it (got %d characters)`, len(s))
	}
	b, err := hex.DecodeString(s[1:])
	if err != nil {
		return nil, errors.New(`must be "*" followed by 40 hex digits, as mysql.user stores it (found a character that is not a hex digit)`)
	}
	return b, nil
}
