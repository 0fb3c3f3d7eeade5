package protocol

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"

	"filippo.io/edwards25519"
)

// Authentication methods by their plugin names.
const (
	NativePassword    = "mysql_native_password"
	CachingSHA2       = "caching_sha2_password"
	Ed25519           = "client_ed25519"
	ClearPassword     = "mysql_clear_password"
	nativeScrambleLen = 20
)

// NewScramble returns a fresh authentication challenge: 20 random printable bytes, none of
// them NUL or '$', as servers send.
func NewScramble() []byte {
	b := make([]byte, nativeScrambleLen)
	if _, err := rand.Read(b); err != nil {
		panic("protocol: no randomness: " + err.Error())
	}
	for i, c := range b {
		c = 33 + c%94 // '!' .. '~'
		if c == '$' {
			c = '#'
		}
		b[i] = c
	}
	return b
}

// NativeStage1 is SHA1(password), what mysql_native_password's answer is built from and
// what a proxy may keep to log in as a user.
func NativeStage1(password string) []byte {
	h := sha1.Sum([]byte(password))
	return h[:]
}

// NativeStage2 is SHA1(SHA1(password)), the hash a server stores (as *HEX).
func NativeStage2(stage1 []byte) []byte {
	h := sha1.Sum(stage1)
	return h[:]
}

// NativeResponse is the mysql_native_password answer to scramble for the password whose
// stage 1 hash is given: SHA1(password) XOR SHA1(scramble ‖ SHA1(SHA1(password))).
func NativeResponse(stage1, scramble []byte) []byte {
	if len(stage1) == 0 {
		return nil // empty password: empty answer
	}
	mask := nativeMask(NativeStage2(stage1), scramble)
	out := make([]byte, len(mask))
	for i := range mask {
		out[i] = stage1[i] ^ mask[i]
	}
	return out
}

// NativeVerify checks a mysql_native_password answer against the stored hash stage2
// (SHA1(SHA1(password))). When it is right it also returns SHA1(password), derived from the
// answer, with which the proxy can log in as the user itself. An empty stage2 is the empty
// password, answered with nothing.
func NativeVerify(stage2, scramble, response []byte) (stage1 []byte, ok bool) {
	if len(stage2) == 0 {
		return nil, len(response) == 0
	}
	if len(stage2) != sha1.Size || len(response) != sha1.Size {
		return nil, false
	}
	mask := nativeMask(stage2, scramble)
	stage1 = make([]byte, sha1.Size)
	for i := range mask {
		stage1[i] = response[i] ^ mask[i]
	}
	if subtle.ConstantTimeCompare(NativeStage2(stage1), stage2) != 1 {
		return nil, false
	}
	return stage1, true
}

func nativeMask(stage2, scramble []byte) []byte {
	h := sha1.New()
	h.Write(scramble[:min(len(scramble), nativeScrambleLen)])
	h.Write(stage2)
	return h.Sum(nil)
}

// SHA2Response is the caching_sha2_password fast-path answer to scramble:
// SHA256(password) XOR SHA256(SHA256(SHA256(password)) ‖ scramble).
func SHA2Response(password string, scramble []byte) []byte {
	if password == "" {
		return nil
	}
	p1 := sha256.Sum256([]byte(password))
	p2 := sha256.Sum256(p1[:])
	h := sha256.New()
	h.Write(p2[:])
	h.Write(scramble[:min(len(scramble), nativeScrambleLen)])
	mask := h.Sum(nil)
	for i := range mask {
		mask[i] ^= p1[i]
	}
	return mask
}

// SHA2Verify checks a caching_sha2_password fast-path answer for a known password.
func SHA2Verify(password string, scramble, response []byte) bool {
	if password == "" {
		return len(response) == 0
	}
	return subtle.ConstantTimeCompare(SHA2Response(password, scramble), response) == 1
}

// Ed25519Response signs scramble as MariaDB's client_ed25519 does: an Ed25519 signature
// whose secret scalar comes from SHA512(password) rather than from a 32-byte seed.
func Ed25519Response(password string, scramble []byte) []byte {
	h := sha512.Sum512([]byte(password))
	s, _ := edwards25519.NewScalar().SetBytesWithClamping(h[:32]) // cannot fail on 32 bytes
	pub := new(edwards25519.Point).ScalarBaseMult(s)

	nonce := sha512.New()
	nonce.Write(h[32:])
	nonce.Write(scramble)
	r, _ := edwards25519.NewScalar().SetUniformBytes(nonce.Sum(nil)) // 64 bytes
	R := new(edwards25519.Point).ScalarBaseMult(r)

	kh := sha512.New()
	kh.Write(R.Bytes())
	kh.Write(pub.Bytes())
	kh.Write(scramble)
	k, _ := edwards25519.NewScalar().SetUniformBytes(kh.Sum(nil))
	S := edwards25519.NewScalar().MultiplyAdd(k, s, r)
	return append(R.Bytes(), S.Bytes()...)
}

// Ed25519PublicKey is the public key MariaDB's ed25519 plugin stores for password (base64
// in mysql.user).
func Ed25519PublicKey(password string) []byte {
	h := sha512.Sum512([]byte(password))
	s, _ := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	return new(edwards25519.Point).ScalarBaseMult(s).Bytes()
}

// Ed25519Verify checks a client_ed25519 answer against the user's public key.
func Ed25519Verify(publicKey, scramble, response []byte) bool {
	if len(publicKey) != ed25519.PublicKeySize || len(response) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(publicKey, scramble, response)
}
