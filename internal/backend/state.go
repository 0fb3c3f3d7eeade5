package backend

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Var is a session variable set to a value, as the server's session tracking reports it.
type Var struct{ Name, Value string }

// varSet is an immutable set of session variables, sorted by name, with a fingerprint
// that makes comparing two sets cheap. Changing one makes a new set.
type varSet struct {
	list []Var
	fp   uint64
}

var emptyVars = &varSet{}

var varSeed = maphash.MakeSeed()

func (v *varSet) get(name string) (string, bool) {
	i, ok := slices.BinarySearchFunc(v.list, name, func(x Var, n string) int { return strings.Compare(x.Name, n) })
	if !ok {
		return "", false
	}
	return v.list[i].Value, true
}

// with returns the set with name set to value (v itself when nothing changes).
func (v *varSet) with(name, value string) *varSet {
	i, found := slices.BinarySearchFunc(v.list, name, func(x Var, n string) int { return strings.Compare(x.Name, n) })
	if found && v.list[i].Value == value {
		return v
	}
	list := make([]Var, 0, len(v.list)+1)
	list = append(list, v.list[:i]...)
	list = append(list, Var{Name: name, Value: value})
	if found {
		i++
	}
	list = append(list, v.list[i:]...)
	var h maphash.Hash
	h.SetSeed(varSeed)
	for _, x := range list {
		h.WriteString(x.Name)
		h.WriteByte(0)
		h.WriteString(x.Value)
		h.WriteByte(0)
	}
	return &varSet{list: list, fp: h.Sum64()}
}

func (v *varSet) equal(o *varSet) bool {
	return v == o || v.fp == o.fp && slices.Equal(v.list, o.list)
}

// State is the state of a client session that must hold on whichever connection runs its
// next unit. It is owned by the session's goroutine.
type State struct {
	// Schema is the default schema; empty for none.
	Schema string
	// Charset is the collation id of the client's handshake (or of its last
	// COM_CHANGE_USER), which a connection logs in with.
	Charset byte
	// LastInsertID is the last insert id the server reported to the session.
	LastInsertID uint64
	vars         *varSet
}

// NewState returns the state of a session that just logged in.
func NewState(schema string, charset byte) *State {
	return &State{Schema: schema, Charset: charset, vars: emptyVars}
}

// SetVar records that the session set a session variable.
func (s *State) SetVar(name, value string) { s.vars = s.vars.with(name, value) }

// Var returns the value the session set a variable to, if it set it.
func (s *State) Var(name string) (string, bool) { return s.vars.get(name) }

// Vars returns the session variables the session set, sorted by name.
func (s *State) Vars() []Var { return s.vars.list }

// Clear forgets the variables and the last insert id, as COM_RESET_CONNECTION does on the
// server.
func (s *State) Clear() {
	s.vars = emptyVars
	s.LastInsertID = 0
}

// Snapshot is the part of a session's state that gives a statement's text its meaning
// when it is prepared: the schema its unqualified names refer to and the variables (the
// SQL mode above all) it is parsed under.
type Snapshot struct {
	schema string
	vars   *varSet
	key    uint64
}

// Snapshot returns the state as it is now, for a statement prepared now.
func (s *State) Snapshot() Snapshot {
	var h maphash.Hash
	h.SetSeed(varSeed)
	h.WriteString(s.Schema)
	h.WriteByte(0)
	var fp [8]byte
	binary.LittleEndian.PutUint64(fp[:], s.vars.fp)
	h.Write(fp[:])
	return Snapshot{schema: s.Schema, vars: s.vars, key: h.Sum64()}
}

// Key identifies the snapshot; statements are shared between sessions by text and key.
func (sn Snapshot) Key() uint64 { return sn.key }

// Of tells whether the snapshot is the state s is in now.
func (sn Snapshot) Of(s *State) bool { return sn.schema == s.Schema && sn.vars.equal(s.vars) }

// Matches tells whether running on c needs no Sync for the session's variables and schema.
func (s *State) Matches(c *Conn) bool {
	return c.schema == s.Schema && c.charset == s.Charset && c.vars.equal(s.vars)
}

// Sync brings c to the session state s before a unit runs on it, with everything it sends
// in one round trip: a COM_CHANGE_USER when the connection is logged in as another user,
// with another character set, or sits in a schema the session has not chosen; a
// COM_RESET_CONNECTION when it carries variables the session did not set; then the
// variables that differ, the schema, and, when needLastInsertID, the last insert id. A
// failure leaves c in a state the proxy does not know: the caller discards it.
func (c *Conn) Sync(ctx context.Context, w *Want, s *State, needLastInsertID bool) error {
	setup := false
	if c.user != w.Credential.User || c.charset != s.Charset || (s.Schema == "" && c.schema != "") {
		if err := c.changeUser(ctx, w, s); err != nil {
			c.broken = true
			return err
		}
		setup = c.caps&mysql.CLIENT_SESSION_TRACK != 0
	}
	var cmds [][]byte
	if setup && c.names != nil {
		// A fresh login's names: a change of user may have left others (see setNames).
		cmds = append(cmds, c.names.setNames())
	}
	set, ok := setStatement(c.vars, s.vars, c.names)
	if !ok {
		// Variables the session never set, whose login value the proxy does not know:
		// only a reset brings them back.
		cmds = append(cmds, []byte{mysql.COM_RESET_CONNECTION})
		c.forgetSession()
		setup = c.caps&mysql.CLIENT_SESSION_TRACK != 0
		set, _ = setStatement(c.vars, s.vars, c.names)
	}
	if setup {
		cmds = append(cmds, []byte(trackingSetup))
	}
	if set != nil {
		cmds = append(cmds, set)
	}
	if s.Schema != c.schema {
		cmds = append(cmds, append([]byte{mysql.COM_INIT_DB}, s.Schema...))
	}
	sendLID := needLastInsertID && c.lastInsertID != s.LastInsertID
	if sendLID {
		cmds = append(cmds, []byte("DO LAST_INSERT_ID("+strconv.FormatUint(s.LastInsertID, 10)+")"))
	}
	if len(cmds) == 0 {
		return nil
	}
	if err := c.exec(cmds...); err != nil {
		c.broken = true
		return fmt.Errorf("%w on %s: %w", ErrSync, c.addr, err)
	}
	c.tracking = c.tracking || setup
	c.Adopt(s)
	if sendLID {
		c.lastInsertID = s.LastInsertID
	}
	return nil
}

// Adopt records that c is now in the session state s: what a unit leaves behind, since the
// session saw every change it made. The last insert id stays c's own: the server's is
// what was last sent to c (Sync) or reported on it (SawLastInsertID), whatever the session's.
func (c *Conn) Adopt(s *State) {
	c.schema, c.charset, c.vars = s.Schema, s.Charset, s.vars
}

// SawLastInsertID records a last insert id a response on c reported: LAST_INSERT_ID() on c
// is now id.
func (c *Conn) SawLastInsertID(id uint64) { c.lastInsertID = id }

// Reset returns c to a clean session (COM_RESET_CONNECTION) with the proxy's session
// tracking on again: what a connection needs after a session that left state the proxy
// cannot undo otherwise (temporary tables, locks, user variables).
func (c *Conn) Reset() error {
	c.forgetSession()
	cmds := [][]byte{{mysql.COM_RESET_CONNECTION}}
	if c.names != nil {
		cmds = append(cmds, c.names.setNames())
	}
	if c.caps&mysql.CLIENT_SESSION_TRACK != 0 {
		cmds = append(cmds, []byte(trackingSetup))
	}
	if err := c.exec(cmds...); err != nil {
		c.broken = true
		return fmt.Errorf("reset on %s: %w", c.addr, err)
	}
	return nil
}

// forgetSession records what a reset undoes on the server.
func (c *Conn) forgetSession() {
	c.vars, c.lastInsertID = emptyVars, 0
	c.stmts.clear()
}

// changeUser logs c in again as w's user, with s's character set and schema.
func (c *Conn) changeUser(ctx context.Context, w *Want, s *State) error {
	secure := c.secure
	login := &protocol.Login{
		Capabilities: c.caps, Charset: s.Charset, User: w.Credential.User, Database: s.Schema,
		AuthPlugin: protocol.NativePassword, Attributes: w.Attributes,
	}
	var err error
	if login.AuthResponse, err = authAnswer(protocol.NativePassword, c.scramble, w.Credential, secure); err != nil {
		login.AuthResponse = nil // the server switches to the account's method
	}
	c.pendingCloses()
	c.pc.ResetSequence()
	if err := c.pc.WritePacket(protocol.AppendChangeUser(nil, login)); err != nil {
		return err
	}
	if err := c.pc.Flush(); err != nil {
		return err
	}
	c.forgetSession()
	c.user, c.charset, c.schema = w.Credential.User, s.Charset, s.Schema
	c.tracking = false
	if err := c.finishAuth(ctx, protocol.NativePassword, c.scramble, w.Credential, secure); err != nil {
		return err
	}
	// What a fresh login with this collation got, which Sync then sets; else what this
	// one got, not kept for others.
	if c.names = c.dialer.knownNames(s.Charset); c.names == nil {
		c.names = c.queryNames()
	}
	return nil
}

// charsetVars are the variables SET NAMES sets, which a connection gets from its login's
// character set rather than from the server's global values.
var charsetVars = map[string]bool{
	"character_set_client": true, "character_set_connection": true, "character_set_results": true,
	"collation_connection": true,
}

// loginNames are the character set and collation of a connection's login, which SET NAMES
// takes to undo a session's own.
type loginNames struct{ charset, collation string }

// setNames is the SET NAMES that gives a connection the names of a fresh login. A reset or
// a change of user does not always: MariaDB 10.11 gives a login with a collation id it
// does not know (255, MySQL 8's default, which go-mysql sends) its default character set,
// utf8mb4, but resets such a session to utf8mb3.
func (n *loginNames) setNames() []byte {
	b := append([]byte(nil), "SET NAMES "...)
	b = appendValue(b, "", n.charset)
	b = append(b, " COLLATE "...)
	return appendValue(b, "", n.collation)
}

// setStatement is the SET that takes a connection from its variables to want's, or nil.
// A variable the connection has and want does not goes back to its value at login: the
// server's global value (DEFAULT), or, for the character set variables, the login's
// (names). ok is false when that is needed and names is unknown.
func setStatement(have, want *varSet, names *loginNames) (set []byte, ok bool) {
	if have.equal(want) {
		return nil, true
	}
	// SET NAMES takes no scope, and comes first; the rest are session variables, the
	// scope of a SET without one.
	namesDone := false
	for _, v := range have.list {
		if _, kept := want.get(v.Name); !kept && charsetVars[v.Name] {
			if names == nil {
				return nil, false
			}
			namesDone = true
		}
	}
	var b []byte
	if namesDone {
		b = names.setNames()
	}
	item := func(b []byte) []byte {
		if b == nil {
			return append(b, "SET SESSION "...)
		}
		return append(b, ", "...)
	}
	for _, v := range have.list {
		if _, kept := want.get(v.Name); kept || charsetVars[v.Name] {
			continue
		}
		b = append(append(item(b), v.Name...), "=DEFAULT"...)
	}
	for _, v := range want.list {
		if cur, ok := have.get(v.Name); ok && cur == v.Value && !(namesDone && charsetVars[v.Name]) {
			continue
		}
		b = append(append(item(b), v.Name...), '=')
		b = appendValue(b, v.Name, v.Value)
	}
	return b, true
}

// appendValue writes a tracked value as a literal SET accepts for the variable: numbers
// bare, NULL bare where a variable can be NULL, everything else quoted.
func appendValue(b []byte, name, value string) []byte {
	if isNumber(value) {
		return append(b, value...)
	}
	if value == "" || strings.EqualFold(value, "NULL") {
		switch name {
		case "character_set_results", "character_set_client", "character_set_connection":
			return append(b, "NULL"...)
		}
	}
	b = append(b, '\'')
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case '\'', '\\':
			b = append(b, '\\', c)
		case 0:
			b = append(b, '\\', '0')
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '-' && i == 0:
		case c == '.' && !dot && digits > 0:
			dot = true
		default:
			return false
		}
	}
	return digits > 0 && s[len(s)-1] != '.'
}

// ValidVarName tells whether name can be written bare in a SET: what session tracking
// reports for real variables.
func ValidVarName(name []byte) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// StateRecord is a State as a hand-over to a new process carries it.
type StateRecord struct {
	Schema       string `json:"schema,omitempty"`
	Charset      byte   `json:"charset,omitempty"`
	LastInsertID uint64 `json:"last_insert_id,omitempty"`
	Vars         []Var  `json:"vars,omitempty"`
}

// Record returns the state as a record.
func (s *State) Record() StateRecord {
	return StateRecord{Schema: s.Schema, Charset: s.Charset, LastInsertID: s.LastInsertID, Vars: slices.Clone(s.vars.list)}
}

// StateOf returns the state r records.
func StateOf(r StateRecord) *State {
	s := NewState(r.Schema, r.Charset)
	s.LastInsertID = r.LastInsertID
	for _, v := range r.Vars {
		s.SetVar(v.Name, v.Value)
	}
	return s
}

// Record returns the snapshot as a record (its schema and variables).
func (sn Snapshot) Record() StateRecord {
	r := StateRecord{Schema: sn.schema}
	if sn.vars != nil {
		r.Vars = slices.Clone(sn.vars.list)
	}
	return r
}
