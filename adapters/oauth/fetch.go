package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// errDowngrade is a redirect of a fetch to a URL whose scheme the issuer's
// own URL could not have.
var errDowngrade = errors.New("redirected to a URL that is not https")

// noDowngrade is a copy of c that follows a redirect only to https (or
// http, when allowHTTP), at most 10: a key set reached over a plain hop is
// whatever anyone on that hop hands over, and every token signed by its
// keys would verify. Go's client follows https to http unasked.
func noDowngrade(c *http.Client, allowHTTP bool) *http.Client {
	own := *c
	next := c.CheckRedirect
	own.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" && !(allowHTTP && req.URL.Scheme == "http") {
			return errDowngrade
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &own
}

// readKeyFile reads --auth-jwks once, bounded.
func readKeyFile(path string) (*keySet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New("could not be opened: give a readable JSON Web Key Set file")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDocumentBytes+1))
	if err != nil {
		return nil, errors.New("could not be read: give a readable JSON Web Key Set file")
	}
	if len(data) > maxDocumentBytes {
		return nil, fmt.Errorf("is larger than %d bytes", maxDocumentBytes)
	}
	return parseKeySet(data)
}

// metadataURLs are where the issuer's metadata may be, in the order tried:
// RFC 8414's (with the issuer's path inserted after the well-known prefix),
// then OpenID Connect Discovery's (inserted, then appended), as the MCP
// authorization specification lists them.
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.Trim(u.Path, "/")
	at := func(p string) string {
		c := *u
		c.Path, c.RawPath = p, ""
		return c.String()
	}
	if path == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{
		at("/.well-known/oauth-authorization-server/" + path),
		at("/.well-known/openid-configuration/" + path),
		at("/" + path + "/.well-known/openid-configuration"),
	}
}

// discover finds the issuer's jwks_uri in its metadata: the first document
// found (a 4xx answer means "not here", anything else is a failure), whose
// issuer must equal ours (RFC 8414 §3.3).
func discover(ctx context.Context, cfg Config) (string, error) {
	for _, u := range metadataURLs(cfg.Issuer) {
		data, status, err := get(ctx, cfg.Client, u)
		if err != nil {
			return "", fmt.Errorf("metadata could not be fetched from %s (%v): check that the issuer is reachable", u, err)
		}
		if status >= 400 && status < 500 {
			continue
		}
		if status != http.StatusOK {
			return "", fmt.Errorf("metadata at %s answered HTTP %d", u, status)
		}
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if json.Unmarshal(data, &meta) != nil {
			return "", fmt.Errorf("metadata at %s is not a JSON object", u)
		}
		if meta.Issuer != cfg.Issuer {
			return "", fmt.Errorf("metadata at %s names another issuer: give --auth-issuer exactly as the issuer names itself", u)
		}
		if err := checkURL(meta.JWKSURI, cfg.AllowHTTP); err != nil {
			return "", fmt.Errorf("metadata at %s: its jwks_uri %v", u, err)
		}
		return meta.JWKSURI, nil
	}
	return "", errors.New("publishes no metadata (RFC 8414 or OpenID discovery): give its key set with --auth-jwks")
}

// fetchKeys fetches and reads a key set.
func fetchKeys(ctx context.Context, c *http.Client, u string) (*keySet, error) {
	data, status, err := get(ctx, c, u)
	if err != nil {
		return nil, fmt.Errorf("could not be fetched (%v)", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("answered HTTP %d", status)
	}
	return parseKeySet(data)
}

// get fetches one document of at most maxDocumentBytes. Its error says what
// failed without the library's text, which may quote the answer.
func get(ctx context.Context, c *http.Client, u string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, errors.New("bad URL")
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, 0, errors.New("timed out")
		}
		if errors.Is(err, errDowngrade) {
			return nil, 0, errDowngrade
		}
		return nil, 0, errors.New("no answer")
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, 0, errors.New("the answer broke off")
	}
	if len(data) > maxDocumentBytes {
		return nil, 0, fmt.Errorf("the answer is larger than %d bytes", maxDocumentBytes)
	}
	return data, res.StatusCode, nil
}
