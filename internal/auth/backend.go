package auth

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// The queries that read the accounts, tried in this order while a server lacks a table or
// column that one needs. Each returns User, Host, plugin, authentication_string, the old
// Password column where authentication_string is empty for a native account (MariaDB
// before 10.4 kept the hash there), and whether the account cannot log in at all (a role,
// or a locked account).
const (
	// MariaDB 10.4 and later: mysql.user is a view of mysql.global_priv, whose JSON has
	// the lock.
	accountsMariaDB = `SELECT u.User, u.Host, u.plugin, u.authentication_string,
	IF(u.plugin IN ('', 'mysql_native_password') AND u.authentication_string = '', u.Password, ''),
	u.is_role = 'Y' OR COALESCE(JSON_VALUE(g.Priv, '$.account_locked'), 'false') IN ('true', '1')
FROM mysql.user u LEFT JOIN mysql.global_priv g ON g.User = u.User AND g.Host = u.Host`
	// MySQL 5.7 and 8: roles are locked accounts.
	accountsMySQL = `SELECT User, Host, plugin, authentication_string, '', account_locked = 'Y' FROM mysql.user`
	// Anything else that has the two columns.
	accountsPlain = `SELECT User, Host, plugin, authentication_string, '', 0 FROM mysql.user`
)

// Server errors that mean a query asked for what this server does not have (or does not
// let the proxy read): try the next one.
const (
	errTableAccessDenied  = 1142 // ER_TABLEACCESS_DENIED_ERROR
	errColumnAccessDenied = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	errBadField           = 1054 // ER_BAD_FIELD_ERROR
	errNoSuchTable        = 1146 // ER_NO_SUCH_TABLE
)

// LoadFromBackend reads the accounts of a server (auth.from_backend) from mysql.user, on
// MariaDB 10.4 and later, where it is a view, and on MySQL 8. The proxy's user needs
// SELECT on mysql.user (and, on MariaDB, on mysql.global_priv to see which accounts are
// locked). See accountFromRow for what each account becomes.
func LoadFromBackend(ctx context.Context, db *sql.DB) (*Users, error) {
	var err error
	for _, query := range []string{accountsMariaDB, accountsMySQL, accountsPlain} {
		var rows []accountRow
		rows, err = queryAccounts(ctx, db, query)
		if err == nil {
			return usersFromRows(rows), nil
		}
		if !lacksSchema(err) {
			break
		}
	}
	return nil, fmt.Errorf("auth: reading accounts from mysql.user: %w", err)
}

// lacksSchema reports whether err says that the server has no such table or column, or
// does not let the proxy read it.
func lacksSchema(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case errBadField, errNoSuchTable, errTableAccessDenied, errColumnAccessDenied:
		return true
	}
	return false
}

// accountRow is one account as the queries read it.
type accountRow struct {
	User, Host, Plugin, AuthString string
	// Password is MariaDB's old Password column, read when AuthString is empty.
	Password string
	// Disabled: a role or a locked account, which cannot log in.
	Disabled bool
}

func queryAccounts(ctx context.Context, db *sql.DB, query string) ([]accountRow, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accountRow
	for rows.Next() {
		var user, host, plugin, auth, password sql.NullString
		var disabled sql.NullInt64
		if err := rows.Scan(&user, &host, &plugin, &auth, &password, &disabled); err != nil {
			return nil, err
		}
		out = append(out, accountRow{
			User: user.String, Host: host.String, Plugin: plugin.String,
			AuthString: auth.String, Password: password.String,
			Disabled: disabled.Valid && disabled.Int64 != 0,
		})
	}
	return out, rows.Err()
}

// usersFromRows builds the accounts of mysql.user's rows, leaving out anonymous accounts,
// roles and locked accounts.
func usersFromRows(rows []accountRow) *Users {
	var users []User
	for _, r := range rows {
		if r.User == "" || r.Disabled {
			continue
		}
		users = append(users, accountFromRow(r))
	}
	return NewUsers(users...)
}

// MariaDB's ed25519 plugin as mysql.user names it (the client side is client_ed25519).
const pluginEd25519 = "ed25519"

// accountFromRow maps a row to an account:
//   - mysql_native_password (or the empty plugin of old servers) with *HEX: Stage2; with
//     nothing, the empty password;
//   - ed25519 with the base64 of a 32-byte key (MariaDB writes 43 characters, without
//     padding): Ed25519Key;
//   - caching_sha2_password or sha256_password with nothing: the empty password;
//   - anything else (a caching_sha2_password hash, unix_socket, gssapi, a hash that does
//     not parse): the account with its Plugin and no secret, so that Verify says why it
//     fails.
func accountFromRow(r accountRow) User {
	u := User{Name: r.User, Host: r.Host, Plugin: r.Plugin}
	auth := r.AuthString
	switch r.Plugin {
	case "", protocol.NativePassword:
		u.Plugin = protocol.NativePassword
		if auth == "" {
			auth = r.Password
		}
		if auth == "" {
			u.HasPassword = true
		} else if stage2, err := parseNativeHash(auth); err == nil {
			u.Stage2 = stage2
		}
	case pluginEd25519:
		if key, ok := decodeEd25519Key(auth); ok {
			u.Ed25519Key = key
		}
	case protocol.CachingSHA2, "sha256_password":
		u.HasPassword = auth == ""
	}
	return u
}

// decodeEd25519Key reads the base64 of a 32-byte public key, with or without padding.
func decodeEd25519Key(s string) ([]byte, bool) {
	key, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.StdEncoding.DecodeString(s)
	}
	if err != nil || len(key) != 32 {
		return nil, false
	}
	return key, true
}
