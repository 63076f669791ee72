package call

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// Results sized for a model's context: over MCP, the lists that
// grow with the data are cut to their first K items, and the response
// object gains "truncated", which maps the JSON Pointer of every list cut,
// in document order, to its full length. The cut is made on the Go values
// as the response is built: the lists are resliced, never copied, and the
// complete result stays what analyze saved.

// cut is one list that was cut: its RFC 6901 pointer in the response
// object and its full length.
type cut struct {
	pointer string
	length  int
}

// truncation is the MCP response's "truncated" object: the lists cut, in
// document order; empty when nothing was.
type truncation []cut

// MarshalJSONTo writes the object in document order, for JSON v2.
func (t truncation) MarshalJSONTo(enc *jsontext.Encoder) error {
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	for _, c := range t {
		if err := enc.WriteToken(jsontext.String(c.pointer)); err != nil {
			return err
		}
		if err := enc.WriteToken(jsontext.Int(int64(c.length))); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

// MarshalJSON writes the same bytes, for the envelope's encoding/json
// fallback.
func (t truncation) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := t.MarshalJSONTo(jsontext.NewEncoder(&buf)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// The pointers of the lists cut, as they appear in a response; a
// blocker's subjects carry its index. [CutLists] gives them to the MCP
// output schema and the tests.
const (
	pointerContributions  = "/result/revenue/contributions"
	pointerDuplicateKeys  = "/result/customer_join/duplicate_keys"
	pointerUnmatchedKeys  = "/result/customer_join/unmatched_keys"
	pointerAnalyzeBlocker = "/result/release/blockers/"
	pointerInspectBlocker = "/result/release_blockers/"
	pointerSubjects       = "/subjects"
)

// AnyIndex stands for an array index in a pattern of [CutLists].
const AnyIndex = "*"

// CutLists returns the pointers of the lists an MCP answer of tool cuts,
// in document order, with [AnyIndex] where a blocker's index goes:
// "/result/release/blockers/*/subjects".
func CutLists(tool string) []string {
	switch tool {
	case protocol.ToolAnalyze:
		return []string{pointerContributions, pointerDuplicateKeys, pointerUnmatchedKeys, pointerAnalyzeBlocker + AnyIndex + pointerSubjects}
	case protocol.ToolInspect:
		return []string{pointerInspectBlocker + AnyIndex + pointerSubjects}
	}
	return nil
}

// cutLists returns result with every list of protocol §9.5 cut to its first k
// items, and what was cut. A result of another type (verify_result's,
// none) has no such list and comes back as it is.
func cutLists(result any, k int) (any, truncation) {
	t := truncation{}
	switch r := result.(type) {
	case domain.Result:
		rev := &r.Revenue
		rev.Contributions = cutList(rev.Contributions, k, pointerContributions, &t)
		j := &r.CustomerJoin
		j.DuplicateKeys = cutList(j.DuplicateKeys, k, pointerDuplicateKeys, &t)
		j.UnmatchedKeys = cutList(j.UnmatchedKeys, k, pointerUnmatchedKeys, &t)
		r.Release.Blockers = cutBlockers(r.Release.Blockers, k, pointerAnalyzeBlocker, &t)
		return r, t
	case app.InspectResult:
		r.ReleaseBlockers = cutBlockers(r.ReleaseBlockers, k, pointerInspectBlocker, &t)
		return r, t
	}
	return result, t
}

// cutList reslices list to its first k items, noting the cut in t.
func cutList[T any](list []T, k int, pointer string, t *truncation) []T {
	if len(list) <= k {
		return list
	}
	*t = append(*t, cut{pointer: pointer, length: len(list)})
	return list[:k:k]
}

// cutBlockers cuts the subjects of every blocker; the blockers are copied,
// since the list they came from may be shared.
func cutBlockers(list []domain.Blocker, k int, prefix string, t *truncation) []domain.Blocker {
	if list == nil {
		return nil
	}
	out := make([]domain.Blocker, len(list))
	for i, b := range list {
		b.Subjects = cutList(b.Subjects, k, prefix+strconv.Itoa(i)+pointerSubjects, t)
		out[i] = b
	}
	return out
}
