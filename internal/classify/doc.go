// Package classify reads a SQL statement once, without a full parse, and says what kind of
// request it is: a normalized digest of its text and a stable 64-bit hash of that digest,
// the statement kind (read, write, locking read, transaction control, session state, DDL),
// the tables it reads and writes, and the request tag of a leading /* gk:type=NAME */
// comment.
//
// A Classifier is reused for every statement of one connection: after the first few
// statements it allocates nothing. The Result it returns, and every byte slice in it, stay
// valid until the next call to Classify on the same Classifier.
//
// The classifier errs on the side of caution. When it cannot tell what a statement does (an
// unknown statement, unbalanced quotes or parentheses, several statements in one text, more
// tables than it tracks), Result.Unsure is set and the statement counts as a write to
// tables it does not know (Result.UnknownTables).
//
// Result.Uses tells what the statements of a text do with state that lives in the backend
// connection and that the server's session tracking (the session state of OK packets) does
// not report: user variables assigned, named and table locks, temporary tables, prepared
// statements in text, SQL_CALC_FOUND_ROWS, LAST_INSERT_ID, the characteristics of the next
// transaction, changes to session tracking itself, handlers, XA transactions, KILL and
// CONNECTION_ID(). A proxy that hands connections back to a pool between units of work keeps
// a client on its connection, or answers for it, by these bits; session variables it carries
// over from what tracking reports, so a plain SET of one uses nothing. Here too the
// classifier errs towards a bit set: a user variable passed to CALL counts as assigned, as an
// OUT parameter may assign it. KILL id and a bare SELECT CONNECTION_ID() are read closely
// enough (Result.KillID, Result.ConnectionIDOnly) that the proxy can translate or answer them.
//
// Result.Volatile tells a result cache that a statement's result is not a function of the
// tables it reads and the session's tracked variables alone: it reads the clock, a random or
// unique value, the connection or the user, a variable or a sequence, or it waits or locks.
// The functions that do are flagged in the keyword table; a function the classifier does not
// know is volatile too, as a stored function may read anything. Only a word that calls, a
// name followed by "(", counts, except the reserved words such as CURRENT_TIMESTAMP that
// need no parentheses, so that a column named now or a name in a string or backquotes
// does not.
package classify
