package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
	"github.com/metricproof/metricproof/ports"
)

// Run files as resources (protocol §9.6): every file of a committed run is the
// resource metricproof://runs/<run_id>/<file>, so the complete evidence is
// one read away from a tool result that holds only the first K items of
// each list.
//
// The SDK serves resources/templates/list from the template registered
// here, and resources/read of a URI the template matches through the
// template's handler. resources/list, and a read of any other URI, are
// answered by a middleware in front of the SDK's own methods: the runs
// live on disk, not in the SDK's registry, and the SDK's not-found error
// is not the one the protocol pins (its code follows MCPGODEBUG, and it
// writes data.uri Go-quoted, which is not JSON for a URI holding U+007F).

// RunURITemplate is the URI template of a run's files.
const RunURITemplate = "metricproof://runs/{run_id}/{file}"

// runURIPrefix starts every run file's URI.
const runURIPrefix = "metricproof://runs/"

// runFileMIMEType is the MIME type of every run file.
const runFileMIMEType = "application/json"

// RunsPerPage is how many runs one resources/list page holds.
const RunsPerPage = 100

// RunFileURI is the URI of the file name of the run runID.
func RunFileURI(runID, name string) string { return runURIPrefix + runID + "/" + name }

// runTemplate is the one resource template the server lists.
func runTemplate() *sdk.ResourceTemplate {
	return &sdk.ResourceTemplate{
		URITemplate: RunURITemplate,
		Name:        "run-file",
		Title:       "A file of a committed run",
		Description: "The exact bytes of one file of a run that analyze committed: file is result.json (the complete result, " +
			"every list whole), receipt.json, checksums.json, or attestation.json for a signed run. run_id is the request_id " +
			"of the analyze that committed it. Reading writes nothing.",
		MIMEType: runFileMIMEType,
	}
}

// resources answers resources/list and resources/read for one server.
type resources struct {
	h handlers
	// cursorKey authenticates this server's list cursors, so that one it
	// never gave is refused as unknown.
	cursorKey []byte
}

// newResources serves the run files of h's calls; key authenticates the
// list cursors (nil for a random one: cursors of this server only).
func newResources(h handlers, key []byte) *resources {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand never fails on supported systems
	}
	return &resources{h: h, cursorKey: key}
}

// middleware answers resources/list and resources/read itself and hands
// every other method on.
func (r *resources) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "resources/list":
			if lr, ok := req.(*sdk.ListResourcesRequest); ok {
				cursor := ""
				if lr.Params != nil {
					cursor = lr.Params.Cursor
				}
				return r.list(ctx, cursor)
			}
		case "resources/read":
			// A URI the template's handler is reached for goes through the
			// SDK's own read, which gives its result the revision's
			// resultType; any other is refused here, with the protocol's
			// not-found error rather than the SDK's.
			if rr, ok := req.(*sdk.ReadResourceRequest); ok {
				uri := ""
				if rr.Params != nil {
					uri = rr.Params.URI
				}
				if !templated(uri) {
					return r.read(ctx, uri)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// read answers resources/read of uri: the file's exact bytes as one text
// content, or as a blob when they are not valid UTF-8 (only a damaged file
// can be), when there are none (the SDK drops an empty text), or when
// their text would be written in more than one and a half times their
// size (only a damaged file holds such bytes: see textBytes). So an answer
// is at most 1.5 times the 4 MiB a run file may hold (a blob's base64 is
// 4/3 of the bytes); a file analyze wrote grows by its quotes and line
// breaks, about a fifth.
func (r *resources) read(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	runID, name, ok := parseRunFileURI(uri)
	if !ok {
		return nil, notFound(uri, "a run file's URI is "+runURIPrefix+"<run_id>/<file>, file one of "+strings.Join(ports.RunFileNames(), ", "))
	}
	ctx, c, end := r.h.begin(ctx)
	defer end()
	p := r.h.calls.ArriveRead()
	c.Arrived()
	data, done, err := r.h.calls.ReadRunFile(ctx, p, runID, name)
	c.Answered(done)
	switch e := protocol.ErrorOf(err); {
	case e != nil && e.Code == protocol.MissingResult:
		return nil, notFound(uri, e.Message)
	case e != nil:
		return nil, readFailure(uri, e)
	}
	content := &sdk.ResourceContents{URI: uri, MIMEType: runFileMIMEType}
	if len(data) > 0 && utf8.Valid(data) && 2*textBytes(data) <= 3*len(data) {
		content.Text = string(data)
	} else {
		content.Blob = append([]byte{}, data...) // never nil: an empty blob is still sent
	}
	return &sdk.ReadResourceResult{Cacheable: sdk.Cacheable{CacheScope: "public"}, Contents: []*sdk.ResourceContents{content}}, nil
}

// templated reports whether uri is a run file's URI whose parts the
// template matches: a run ID and one of the run file names, which hold
// only letters, digits, '-', '_' and '.'.
func templated(uri string) bool {
	runID, name, ok := parseRunFileURI(uri)
	return ok && domain.ValidID(runID) && slices.Contains(ports.RunFileNames(), name)
}

// textBytes is the length of data, valid UTF-8, as a JSON string's
// content the way the SDK's encoding/json writes it: '"', '\\', line feed,
// carriage return, tab, backspace and form feed as two bytes; other control characters, '<',
// '>' and '&' as six (\u00XX); U+2028 and U+2029 as six for their three.
func textBytes(data []byte) int {
	n := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		case c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9):
			n += 6
			i += 2
		default:
			n++
		}
	}
	return n
}

// parseRunFileURI splits metricproof://runs/<run_id>/<file>, exactly that
// form: no query, no fragment, no escapes, nothing else. The parts are
// checked by the app.
func parseRunFileURI(uri string) (runID, name string, ok bool) {
	rest, ok := strings.CutPrefix(uri, runURIPrefix)
	if !ok {
		return "", "", false
	}
	runID, name, ok = strings.Cut(rest, "/")
	return runID, name, ok
}

// list answers resources/list: the result.json of every committed run,
// sorted by run ID, RunsPerPage at a time.
func (r *resources) list(ctx context.Context, cursor string) (*sdk.ListResourcesResult, error) {
	after := ""
	if cursor != "" {
		var ok bool
		if after, ok = r.openCursor(cursor); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: unknown cursor; list from the start, without one"}
		}
	}
	runs, more, err := r.h.calls.Runs(ctx, after, RunsPerPage)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the runs could not be listed: " + protocol.ErrorOf(err).Message}
	}
	res := &sdk.ListResourcesResult{Cacheable: sdk.Cacheable{CacheScope: "public"}, Resources: []*sdk.Resource{}}
	for _, run := range runs {
		res.Resources = append(res.Resources, &sdk.Resource{
			URI:      RunFileURI(run.Name, ports.ResultFile),
			Name:     run.Name,
			MIMEType: runFileMIMEType,
			Size:     run.ResultBytes,
		})
	}
	if more {
		res.NextCursor = r.sealCursor(runs[len(runs)-1].Name)
	}
	return res, nil
}

// sealCursor is the cursor of the page after the run runID: the ID and
// this server's MAC of it.
func (r *resources) sealCursor(runID string) string {
	return runID + "." + hex.EncodeToString(r.mac(runID))
}

// openCursor returns the run ID a cursor this server gave continues after.
func (r *resources) openCursor(cursor string) (string, bool) {
	runID, sum, ok := strings.Cut(cursor, ".")
	if !ok {
		return "", false
	}
	got, err := hex.DecodeString(sum)
	return runID, err == nil && hmac.Equal(got, r.mac(runID))
}

func (r *resources) mac(runID string) []byte {
	m := hmac.New(sha256.New, r.cursorKey)
	m.Write([]byte(runID))
	return m.Sum(nil)[:16]
}

// notFound is the protocol's resource-not-found error: -32602 whatever
// MCPGODEBUG says, with the URI in data as JSON.
func notFound(uri, why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Resource not found: " + why, Data: uriData(uri)}
}

// readFailure is a read that failed: -32603, with the URI in data.
func readFailure(uri string, e *protocol.Error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the resource could not be read (" + string(e.Code) + "): " + e.Message, Data: uriData(uri)}
}

// uriData is {"uri": uri} as JSON, the URI escaped as JSON escapes it.
func uriData(uri string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		URI string `json:"uri"`
	}{uri}) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
