package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"time"

	"github.com/metricproof/metricproof/app/place"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/app/remedy"
	"github.com/metricproof/metricproof/ports"
)

// Service holds the use cases over one set of ports for one operator's
// options. It is safe for concurrent use, but for one rule: analyze
// commits of one service on one output directory must take turns (a
// second would meet the first's writer lock, held by this very process,
// and answer OUTPUT_BUSY), which package app/call sees to.
type Service struct {
	p      Ports
	closer io.Closer
	opts   Options
	// ledger is the ledger's resolved workspace-relative path; empty
	// without --ledger.
	ledger string
	// ledgerInStore: the ledger lies in object storage, and ledger is
	// its URL.
	ledgerInStore bool
	// ledgerFile is the ledger, its directory opened once by Open: every
	// access to it after that goes through this handle.
	ledgerFile ports.Ledger
	// signingKey signs every run analyze commits; trustedKey is the only
	// key verify_result accepts. Either may be nil.
	signingKey ed25519.PrivateKey
	trustedKey ed25519.PublicKey
	sources    sources
	places     place.Places
}

// Open wires the ports for the options and checks what every call needs
// before any input is read: the workspace (MISSING_WORKSPACE), the keys
// (INVALID_OPTIONS), and the ledger's place (PATH_BOUNDARY,
// INVALID_OUTPUT). Its faults are never recorded in the ledger.
func Open(o Options, wire Wire) (s *Service, err error) {
	defer func() {
		if recover() != nil {
			s, err = nil, protocol.Errorf(protocol.InternalError, "the engine failed unexpectedly while it started")
		}
	}()
	p, closer, werr := wire(o)
	var oe *OptionError
	switch {
	case errors.As(werr, &oe):
		return nil, optionFault(oe)
	case werr != nil:
		return nil, workspaceFault(werr)
	}
	s = &Service{p: p, closer: closer, opts: o, sources: sources{port: p.Sources}, places: place.Places{Paths: p.Paths, OutputDir: o.OutputDir, Ledger: o.Ledger, ReadOnly: o.ReadOnly}}
	if err := s.readKeys(); err != nil {
		s.Close()
		return nil, err
	}
	if o.Ledger != "" {
		loc, err := s.places.ResolveLedger()
		if err != nil {
			s.Close()
			return nil, err
		}
		l, err := p.Ledger.OpenLedger(loc.Rel)
		if err != nil {
			s.Close()
			return nil, place.LedgerFault(err)
		}
		s.ledger, s.ledgerInStore, s.ledgerFile = loc.Rel, loc.Store, l
	}
	return s, nil
}

// Close releases what Open opened.
func (s *Service) Close() error {
	var err error
	if s.ledgerFile != nil {
		err = s.ledgerFile.Close()
	}
	if s.closer == nil {
		return err
	}
	return errors.Join(err, s.closer.Close())
}

// Now is the service's clock, which call IDs are stamped with.
func (s *Service) Now() time.Time { return s.p.Clock.Now() }

// CheckPaths checks every operator path as the calls will: the output
// directory against the write boundary, the cancel file and the ledger
// inside theirs, and hashes the engine. A server runs it at start, so
// that a server that could answer no analyze does not start; each call
// checks again.
func (s *Service) CheckPaths() error {
	ctx := context.Background()
	if s.opts.OutputDir != "" {
		out, err := s.places.ResolveOutput(true)
		if err != nil {
			return err
		}
		if err := s.reach(ctx, out.Rel, out.Store, "the output directory"); err != nil {
			return err
		}
	}
	if s.opts.CancelFile != "" {
		if _, err := s.p.Cancel.Cancelled(ctx); err != nil {
			return markerFault(err)
		}
	}
	if s.ledger != "" {
		if _, err := s.places.ResolveLedger(); err != nil {
			return err
		}
		if err := s.reach(ctx, s.ledger, s.ledgerInStore, "the ledger"); err != nil {
			return err
		}
	}
	if _, err := s.p.Engine.Identity(); err != nil {
		return engineFault()
	}
	return nil
}

// reach asks the store of a place in object storage (rel, a Location.Rel
// with inStore set), what, once whether it serves it; a place on disk
// passes.
func (s *Service) reach(ctx context.Context, rel string, inStore bool, what string) error {
	if !inStore || s.p.Reach == nil {
		return nil
	}
	if err := s.p.Reach(ctx, rel); err != nil {
		return placeFault(what, err)
	}
	return nil
}

// checkCancel answers CANCELLED when the caller's context is done (the
// transport's cancellation: a signal, an MCP notifications/cancelled) or
// the operator's marker exists. point names the check in the message.
func (s *Service) checkCancel(ctx context.Context, point string) error {
	if ctx.Err() != nil {
		return protocol.Errorf(protocol.Cancelled, "the call was cancelled (checked %s); it stopped and nothing was committed", point)
	}
	cancelled, err := s.p.Cancel.Cancelled(ctx)
	if err != nil {
		return markerFault(err)
	}
	if cancelled {
		return protocol.Errorf(protocol.Cancelled, "the cancel file exists (checked %s); the call stopped and nothing was committed", point)
	}
	if ctx.Err() != nil { // cancelled while the marker was looked at
		return protocol.Errorf(protocol.Cancelled, "the call was cancelled (checked %s); it stopped and nothing was committed", point)
	}
	return nil
}

// needsOutputDir refuses a tool that reads or writes runs when the
// operator gave no output directory.
func (s *Service) needsOutputDir(tool string) error {
	if s.opts.OutputDir == "" {
		return protocol.Errorf(protocol.MissingContext, "%s needs --output-dir, chosen by the operator", tool)
	}
	return nil
}

// warmEngine takes the engine's hash on another core while this one reads
// and computes: it is needed later (the receipt, verify's engine check, a
// ledger record) and costs one pass over the executable. Identity runs
// once; the later call waits for this one, and meets a panic there too.
func (s *Service) warmEngine() {
	go func() {
		defer func() { _ = recover() }()
		_, _ = s.p.Engine.Identity()
	}()
}

// readKeys reads the signing and trusted keys the options name.
func (s *Service) readKeys() error {
	if s.opts.SigningKey != "" {
		k, err := s.p.Keys.SigningKey(s.opts.SigningKey)
		if err != nil {
			return keyFault(false, err)
		}
		s.signingKey = k
	}
	if s.opts.TrustedKey != "" {
		k, err := s.p.Keys.TrustedKey(s.opts.TrustedKey)
		if err != nil {
			return keyFault(true, err)
		}
		s.trustedKey = k
	}
	return nil
}

// keyFault is a key file that could not be read as the key its option
// names: the signing key, or the trusted key.
func keyFault(trusted bool, err error) *protocol.Error {
	option, want, how := "--signing-key", "an Ed25519 private key in PKCS#8 PEM, unencrypted and alone in its file (a public key goes to --trusted-key)", "make one with openssl genpkey -algorithm ed25519, then chmod 600"
	if trusted {
		option, want, how = "--trusted-key", "an Ed25519 public key in SPKI PEM, alone in its file (a private key goes to --signing-key)", "make it from the signer's private key with openssl pkey -pubout"
	}
	switch {
	case errors.Is(err, ports.ErrMissing):
		return protocol.Errorf(protocol.InvalidOptions, "the file of %s does not exist; give the path of an existing key file, or %s", option, how)
	case errors.Is(err, ports.ErrNotRegular):
		return protocol.Errorf(protocol.InvalidOptions, "the file of %s is not a regular file; give the path of the key file itself", option)
	case errors.Is(err, ports.ErrKeyExposed):
		return protocol.Errorf(protocol.InvalidOptions, "the file of %s grants access to group or others; make it private with chmod 600 (and make a new key if others may have read it)", option)
	case errors.Is(err, ports.ErrKeyFormat):
		return protocol.Errorf(protocol.InvalidOptions, "the file of %s is not %s; %s", option, want, how)
	}
	return protocol.Errorf(protocol.InvalidOptions, "the file of %s could not be read%s; check that this user may read it", option, remedy.Because(err))
}

// optionFault is an option naming a place in object storage that the
// composition could not open (protocol §15.5): INVALID_OPTIONS, decided
// before any request, unrecorded.
func optionFault(e *OptionError) *protocol.Error {
	switch {
	case errors.Is(e.Err, ports.ErrStoreURL):
		return protocol.Errorf(protocol.InvalidOptions, "%s is not a store's URL: s3://BUCKET or s3://BUCKET/PREFIX, the bucket 3 to 63 lowercase letters, digits, dots and hyphens, the prefix plain names (none empty, . or .., none starting with %s or %s, no control character, backslash, ?, # or %%)", e.Option, ".attempt-", ports.PendingPrefix)
	case errors.Is(e.Err, ports.ErrNoCredentials):
		return protocol.Errorf(protocol.InvalidOptions, "%s names object storage, and the standard AWS environment and files hold no credentials this program could use: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (docs/team.md says what they must be allowed)", e.Option)
	}
	return protocol.Errorf(protocol.InvalidOptions, "%s names object storage, and the standard AWS configuration (AWS_* environment variables, the config and credentials files) could not be read or names no region: set AWS_REGION (and AWS_ENDPOINT_URL_S3 for a server of your own), or correct the profile", e.Option)
}

// workspaceFault is a workspace that could not be opened.
func workspaceFault(err error) *protocol.Error {
	switch {
	case errors.Is(err, ports.ErrMissing):
		return protocol.Errorf(protocol.MissingWorkspace, "the workspace does not exist")
	case errors.Is(err, ports.ErrNotDir):
		return protocol.Errorf(protocol.MissingWorkspace, "the workspace is not a directory")
	}
	return protocol.Errorf(protocol.MissingWorkspace, "the workspace cannot be opened%s", remedy.Because(err))
}

// markerFault is a cancel marker that could not be checked.
func markerFault(err error) *protocol.Error {
	if errors.Is(err, ports.ErrOutside) {
		return protocol.Errorf(protocol.PathBoundary, "the cancel file resolves outside the workspace")
	}
	return protocol.Errorf(protocol.IOOrNumericError, "the cancel file could not be checked%s", remedy.Because(err))
}

// engineFault is an engine that could not be hashed.
func engineFault() *protocol.Error {
	return protocol.Errorf(protocol.IOOrNumericError, "the running engine could not be hashed")
}

// placeFault is a place in object storage, what ("the output directory",
// "the ledger"), that its store would not serve when asked once (Reach).
func placeFault(what string, err error) *protocol.Error {
	if errors.Is(err, ports.ErrNoBucket) {
		return remedy.NoBucket(what)
	}
	return remedy.RetryableIf(err, protocol.Errorf(protocol.IOOrNumericError, "%s could not be listed in its store%s", what, remedy.Because(err)))
}
