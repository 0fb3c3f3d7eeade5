// Package auth holds the accounts that the proxy authenticates clients against in its
// pooled mode. There the proxy is the server as far as the client can tell: it sends the
// challenge, checks the answer itself, and later logs in to the backends as the same user
// with what the login taught it. This package decides whether an answer is right
// ([User.Verify]) and what the proxy may keep from it ([Credential]); the bytes of the
// exchange and the hash arithmetic are package protocol's.
//
// Accounts come from one of two sources. A users file (auth.users_file, [LoadFile]) lists
// each user with its clear password or its mysql_native_password hash and a bound on its
// client connections; it must be mode 0600, since what it holds logs in to the databases.
// Or the proxy reads them from a backend's mysql.user (auth.from_backend,
// [LoadFromBackend]), keeps them current with a [Refresher], and picks among the accounts
// of a name by host pattern as the server does ([Users.Lookup]). A [Store] holds whichever
// set is current, swaps it whole on reload, and counts each user's connections across
// swaps.
//
// What the proxy can check and what it can log in with depend on the secret it knows. With
// the clear password it can check every method and log in with any. With only the stored
// mysql_native_password hash, stage2 = SHA1(SHA1(password)), it can still do both, as
// ProxySQL does: the client's answer is SHA1(password) XOR SHA1(scramble ‖ stage2), so
// X = answer XOR SHA1(scramble ‖ stage2) is the client's claim of SHA1(password), and the
// answer is right exactly when SHA1(X) equals stage2. X is then the stage-1 hash, which is
// all that a native login to a backend needs: the proxy answers the backend's own challenge
// with it. (The same arithmetic is why the stored hash is as good as the password to anyone
// who also overhears one login, and why it is redacted wherever it might be printed.)
//
// Other methods do not give this back. A MariaDB ed25519 account stores the public key; the
// client proves the password by signing the challenge with a secret scalar derived from
// SHA512(password), and a signature reveals nothing that signs the next challenge, so the
// proxy can verify the login but cannot log in to a backend as that user. A MySQL
// caching_sha2_password account stores a salted, 5000-round SHA-256 crypt of the password;
// its fast path checks SHA256(password) XOR SHA256(SHA256(SHA256(password)) ‖ scramble)
// against a SHA256(SHA256(password)) that the server keeps only in memory after a full
// login, so the proxy can neither check the answer nor make one. Such accounts need their
// clear password in the users file; read from a backend, they are kept without a secret so
// that a refused login can say why.
package auth
