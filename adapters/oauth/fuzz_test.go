package oauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/adapters/oauth"
	"github.com/metricproof/metricproof/adapters/oauth/oauthtest"
)

// FuzzVerify feeds arbitrary bearer tokens, seeded with valid and hostile
// ones: each is accepted with a principal, or refused with a Fault of the
// closed set whose text is one of the fixed ones (so no byte of the token
// reaches it); nothing panics.
func FuzzVerify(f *testing.F) {
	clock := oauthtest.NewClock()
	iss := oauthtest.New(f, clock)
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: iss.URL, Audience: audience, AllowHTTP: true, Clock: clock})
	if err != nil {
		f.Fatal(err)
	}
	k := iss.Current()
	f.Add(iss.Token(f, iss.Claims(audience, "metricproof:read")))
	f.Add(oauthtest.Sign(f, map[string]any{"alg": "none"}, iss.Claims(audience, "metricproof:run"), k))
	f.Add(oauthtest.SignHMAC(f, map[string]any{"alg": "HS256", "kid": k.ID}, iss.Claims(audience, "metricproof:run"), k.PublicPEM(f)))
	f.Add("eyJhbGciOiJSUzI1NiJ9.e30.")
	f.Add("..")
	texts := map[string]bool{}
	for _, r := range []oauth.Reason{oauth.ReasonMalformed, oauth.ReasonAlgorithm, oauth.ReasonUnknownKey, oauth.ReasonSignature,
		oauth.ReasonIssuer, oauth.ReasonAudience, oauth.ReasonNoExpiry, oauth.ReasonExpired, oauth.ReasonNotYetValid, oauth.ReasonNoSubject, oauth.ReasonLongSubject} {
		texts[(&oauth.Fault{Reason: r}).Error()] = true
	}
	f.Fuzz(func(t *testing.T, token string) {
		ti, err := v.Verify(context.Background(), token, nil)
		if err == nil {
			if p, ok := oauth.PrincipalOf(ti); !ok || p.Issuer != iss.URL || p.Subject == "" {
				t.Fatalf("accepted without a principal: %+v", ti)
			}
			return
		}
		var fault *oauth.Fault
		if !errors.As(err, &fault) || !texts[err.Error()] {
			t.Fatalf("refusal outside the closed set: %q", err)
		}
		if len(token) >= 8 && strings.Contains(err.Error(), token) {
			t.Fatalf("the error holds the token")
		}
	})
}
