package oauth

import (
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Reason says why a token was refused: a closed set, each with a fixed
// text.
type Reason string

// The reasons, in the order Verify checks.
const (
	ReasonMalformed   Reason = "malformed"
	ReasonAlgorithm   Reason = "algorithm"
	ReasonUnknownKey  Reason = "unknown_key"
	ReasonSignature   Reason = "signature"
	ReasonIssuer      Reason = "issuer"
	ReasonAudience    Reason = "audience"
	ReasonNoExpiry    Reason = "no_expiry"
	ReasonExpired     Reason = "expired"
	ReasonNotYetValid Reason = "not_yet_valid"
	ReasonNoSubject   Reason = "no_subject"
	ReasonLongSubject Reason = "long_subject"
)

// texts are the messages of the reasons: fixed, so that no byte of a token
// can reach one.
func texts() map[Reason]string {
	return map[Reason]string{
		ReasonMalformed:   "the bearer token is not a signed JWT access token",
		ReasonAlgorithm:   "the bearer token's signature algorithm is not one the issuer's keys allow",
		ReasonUnknownKey:  "the bearer token names a key the issuer's key set does not hold",
		ReasonSignature:   "the bearer token's signature does not verify",
		ReasonIssuer:      "the bearer token is from another issuer",
		ReasonAudience:    "the bearer token is not for this server (its aud does not name this server's URL)",
		ReasonNoExpiry:    "the bearer token has no expiry (exp)",
		ReasonExpired:     "the bearer token has expired",
		ReasonNotYetValid: "the bearer token is not valid yet",
		ReasonNoSubject:   "the bearer token names no subject (sub)",
		ReasonLongSubject: "the bearer token's subject (sub) is longer than the 255 characters OpenID Connect allows",
	}
}

// Fault is a refused token.
type Fault struct {
	Reason Reason
}

func fault(r Reason) *Fault { return &Fault{Reason: r} }

// Error returns the reason's fixed text, ending in what to do.
func (f *Fault) Error() string {
	return texts()[f.Reason] + ": get a new token from the issuer"
}

// Unwrap makes a Fault an auth.ErrInvalidToken, which the SDK's bearer
// middleware answers with 401.
func (f *Fault) Unwrap() error { return auth.ErrInvalidToken }

// OptionError is an option that cannot be served, for the composition
// root to answer as INVALID_OPTIONS.
type OptionError struct {
	// Option is the option's name, e.g. "--auth-issuer".
	Option string
	// Reason completes the sentence that starts with the option's name.
	Reason string
}

// Error names the option, never a path.
func (e *OptionError) Error() string { return e.Option + " " + e.Reason }
