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
package classify
