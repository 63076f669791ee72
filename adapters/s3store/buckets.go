package s3store

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/metricproof/metricproof/ports"
)

// Scheme starts every URL of a store: an option whose value starts with it
// names a place in object storage, never a path.
const Scheme = "s3://"

// credentialsWait bounds Connect's one look for credentials: from the
// environment or a file it is at once; from an instance's or a container's
// metadata endpoint, one request.
const credentialsWait = 10 * time.Second

// Buckets is every bucket the standard AWS environment reaches, each place
// in it named by its URL, s3://BUCKET/PREFIX: what an option naming a
// store resolves to (a ports.Location with Store set, whose Rel is that
// URL), and what the app then hands the evidence and ledger ports. It
// implements ports.EvidenceStore and ports.LedgerStore over those URLs,
// each through the Store of its bucket; one client serves them all. It is
// safe for concurrent use.
type Buckets struct {
	client *s3.Client
	// renews: the credentials expire, and the client renews them over
	// the network (an instance's role, STS, SSO).
	renews bool

	mu     sync.Mutex
	stores map[string]*Store // by bucket, with no prefix of their own
}

var (
	_ ports.EvidenceStore = (*Buckets)(nil)
	_ ports.LedgerStore   = (*Buckets)(nil)
)

// Connect reads the standard AWS environment and files, as Open does, and
// takes the credentials they name once: ErrConfig without a region or
// when they cannot be read, ports.ErrNoCredentials when they name none the
// client can use. It makes no request to a store.
func Connect(ctx context.Context) (*Buckets, error) {
	client, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	creds := client.Options().Credentials
	if creds == nil {
		return nil, ports.ErrNoCredentials
	}
	ctx, cancel := context.WithTimeout(ctx, credentialsWait)
	defer cancel()
	got, err := creds.Retrieve(ctx)
	if err != nil {
		return nil, ports.ErrNoCredentials // the SDK's text may name a file
	}
	return &Buckets{client: client, renews: got.CanExpire, stores: map[string]*Store{}}, nil
}

// Ports are the TCP ports the client connects to, for a confinement that
// allows no other (protocol §16.3): its endpoint's (AWS_ENDPOINT_URL_S3's,
// its scheme's default when it names none; 443 for AWS's own endpoints),
// and, when the credentials expire, the ports the SDK renews them on: 443
// (STS, SSO) and 80 (an instance's or a container's metadata endpoint).
// A renewal from a container endpoint on another port is not allowed.
func (b *Buckets) Ports() []uint16 {
	out := []uint16{endpointPort(b.client.Options().BaseEndpoint)}
	if b.renews {
		out = append(out, 443, 80)
	}
	return out
}

// endpointPort is the TCP port of the endpoint URL; 443 without one.
func endpointPort(endpoint *string) uint16 {
	if endpoint == nil {
		return 443
	}
	u, err := url.Parse(*endpoint)
	if err != nil {
		return 443
	}
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// Canonical returns the one spelling of the place rawURL names,
// s3://BUCKET or s3://BUCKET/PREFIX without a final slash, as ParseURL
// reads it: ErrURL for anything else, and for a prefix that runs through
// an attempt's or a pending directory's name, which only the program
// makes and whose contents no option may name.
func Canonical(rawURL string) (string, error) {
	bucket, prefix, err := ParseURL(rawURL)
	if err != nil {
		return "", err
	}
	if prefix == "" {
		return Scheme + bucket, nil
	}
	for part := range strings.SplitSeq(strings.TrimSuffix(prefix, "/"), "/") {
		if strings.HasPrefix(part, AttemptPrefix) || strings.HasPrefix(part, ports.PendingPrefix) {
			return "", ErrURL
		}
	}
	return Scheme + bucket + "/" + strings.TrimSuffix(prefix, "/"), nil
}

// Resolve implements ports.PathResolver for the URLs of stores: the place
// is its canonical URL, a prefix, which exists as a directory (a key
// prefix needs no making). It asks nothing of the store.
func (b *Buckets) Resolve(rawURL string) (ports.Location, error) {
	url, err := Canonical(rawURL)
	if err != nil {
		return ports.Location{}, err
	}
	return ports.Location{Rel: url, Exists: true, Dir: true, Store: true}, nil
}

// place is the store of url's bucket and url's prefix within it, as a
// path relative to that store ("." for the bucket itself). A url that is
// not one Resolve returns is ports.ErrOutside: no place of a store.
func (b *Buckets) place(url string) (*Store, string, error) {
	bucket, prefix, err := ParseURL(url)
	if err != nil {
		return nil, "", ports.ErrOutside
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.stores[bucket]
	if !ok {
		st = newStore(b.client, bucket, "")
		b.stores[bucket] = st
	}
	rel := strings.TrimSuffix(prefix, "/")
	if rel == "" {
		rel = "."
	}
	return st, rel, nil
}

// Reach asks the store once, with one listing of url's prefix, whether it
// answers there: nil, or the ports' words for why not (ports.ErrNoBucket,
// ports.ErrStoreDenied, ports.ErrUnavailable). It is the read that
// readiness makes (protocol §14, §15).
func (b *Buckets) Reach(ctx context.Context, url string) error {
	st, rel, err := b.place(url)
	if err != nil {
		return err
	}
	return st.readyAt(ctx, rel)
}

// OpenWriter implements ports.EvidenceStore for the output directory dir,
// a store's URL.
func (b *Buckets) OpenWriter(dir string) (ports.EvidenceWriter, error) {
	st, rel, err := b.place(dir)
	if err != nil {
		return nil, err
	}
	return st.OpenWriter(rel)
}

// ReadRun implements ports.EvidenceStore for the output directory dir, a
// store's URL.
func (b *Buckets) ReadRun(dir, runID string, names []string, limitBytes int64) (ports.SavedRun, error) {
	st, rel, err := b.place(dir)
	if err != nil {
		return ports.SavedRun{}, err
	}
	return st.ReadRun(rel, runID, names, limitBytes)
}

// ListRuns implements ports.EvidenceStore for the output directory dir, a
// store's URL.
func (b *Buckets) ListRuns(dir string) ([]ports.ListedRun, error) {
	st, rel, err := b.place(dir)
	if err != nil {
		return nil, err
	}
	return st.ListRuns(rel)
}

// OpenLedger implements ports.LedgerStore for the ledger url, a store's
// URL: its records are the objects under that prefix.
func (b *Buckets) OpenLedger(url string) (ports.Ledger, error) {
	st, rel, err := b.place(url)
	if err != nil {
		return nil, err
	}
	return st.OpenLedger(rel)
}
