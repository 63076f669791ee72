package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/metricproof/metricproof/app/jsonvalue/jsonvaluetest"
	"github.com/metricproof/metricproof/domain"
)

// FuzzCheckDefinitions holds checkDefinitions to protocol §4's "equal, as a JSON
// value, to the synthetic-v1 contract", two ways:
//
//   - even mode: the fuzz bytes drive a rewrite of the contract. Spelling
//     changes that keep the value (key order, white space, string escapes,
//     80 as 80.0, 8e1, 800E-1 or 0.80e+2) must be accepted; a value change
//     (a string, number or boolean changed, a member dropped or added, a
//     type changed, an array reordered) or a duplicate key must be refused.
//   - odd mode: the fuzz bytes are the definitions file; checkDefinitions
//     accepts exactly when the jsonvaluetest oracle decodes them to the
//     contract's value.
//
// Run it with:
//
//	go test ./app -run '^$' -fuzz '^FuzzCheckDefinitions$' -fuzztime 30s -fuzzminimizetime 2s
func FuzzCheckDefinitions(f *testing.F) {
	contract, err := jsonvaluetest.Decode([]byte(domain.Contract))
	if err != nil {
		f.Fatal(err)
	}
	for _, ops := range [][]byte{
		{}, {1, 1, 1, 1, 1, 1, 1, 1}, {2, 3, 5, 7, 11, 13, 17, 19, 23}, {3, 255, 254, 253, 252, 251},
		{4, 0}, {4, 7, 1}, {4, 20, 2}, {4, 33, 3}, {5, 1, 2}, {6, 2}, {7, 0, 1}, {7, 3, 0},
	} {
		f.Add(uint8(0), ops)
	}
	for _, raw := range []string{
		domain.Contract, contractRewritten, "{}", "",
		strings.Replace(domain.Contract, `"precision": 80`, `"precision": 80.000`, 1),
		strings.Replace(domain.Contract, `"precision": 80`, `"precision": 8e1`, 1),
		strings.Replace(domain.Contract, `"precision": 80`, `"precision": 81`, 1),
		strings.Replace(domain.Contract, `"synthetic": true`, `"synthetic": 1`, 1),
		strings.Replace(domain.Contract, `"rate_places": 12`, `"rate_places": 12, "rate_places": 12`, 1),
		strings.Replace(domain.Contract, `"half_even"`, `"half\u005feven"`, 1),
		strings.Replace(domain.Contract, `"half_even"`, `"half\ud800even"`, 1),
	} {
		f.Add(uint8(1), []byte(raw))
	}
	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		if mode%2 == 1 {
			v, err := jsonvaluetest.Decode(data)
			equal := err == nil && jsonvaluetest.Equal(v, contract)
			got := checkDefinitions(data)
			if equal != (got == nil) {
				t.Fatalf("checkDefinitions says %v, the oracle equal=%v, for %q", got, equal, data)
			}
			checkDefinitionsError(t, got)
			return
		}
		ops := &opStream{b: data}
		doc, changed := rewriteContract(contract, ops)
		// The rewrite is held to the oracle first, so that a bug in it
		// cannot pass for one in checkDefinitions.
		v, err := jsonvaluetest.Decode([]byte(doc))
		switch {
		case changed == changedDuplicate && !errors.Is(err, jsonvaluetest.ErrDuplicateKey):
			t.Fatalf("rewrite bug: a duplicate key the oracle does not see (%v): %s", err, doc)
		case changed != changedDuplicate && err != nil:
			t.Fatalf("rewrite bug: not strict JSON (%v): %s", err, doc)
		case changed != changedDuplicate && jsonvaluetest.Equal(v, contract) != (changed == unchanged):
			t.Fatalf("rewrite bug: change %q, the oracle disagrees: %s", changed, doc)
		}
		got := checkDefinitions([]byte(doc))
		if (got == nil) != (changed == unchanged) {
			t.Fatalf("checkDefinitions says %v after change %q of:\n%s", got, changed, doc)
		}
		checkDefinitionsError(t, got)
	})
}

// checkDefinitionsError holds a refusal to its type and to its fixed
// texts: a rule and an offset, or a path of the contract's own keys, never
// anything of the file.
func checkDefinitionsError(t *testing.T, err error) {
	t.Helper()
	var de *domain.DefinitionsError
	if err != nil && (!errors.As(err, &de) || !strings.HasPrefix(err.Error(), domain.DefinitionsFile+": ")) {
		t.Fatalf("not a DefinitionsError naming the file: %T %v", err, err)
	}
	if err != nil && !definitionsMessage.MatchString(err.Error()) {
		t.Fatalf("a message beyond the fixed texts: %s", err)
	}
}

var definitionsMessage = regexp.MustCompile(`^contracts/metric-definitions\.json: (not strict JSON: [a-zA-Z0-9 \-',:\\{}\]]+ at byte [0-9]+|differs from the synthetic-v1 contract at (\$|[a-z_]+(\.[a-z_0-9]+)*)|starts with a byte order mark, which strict JSON refuses; save the file as UTF-8 without a byte order mark)$`)

// opStream hands out the fuzz bytes one decision at a time; once they run
// out every decision is 0, the plain choice.
type opStream struct {
	b []byte
	i int
}

func (o *opStream) next() int {
	if o.i >= len(o.b) {
		return 0
	}
	o.i++
	return int(o.b[o.i-1])
}

// What rewriteContract changed.
const (
	unchanged        = ""
	changedDuplicate = "a duplicate key"
)

// rewriteContract writes the contract back out with spellings chosen by
// ops, after at most one change of value, which it names.
func rewriteContract(contract any, ops *opStream) (doc string, changed string) {
	tree := deepCopy(contract)
	w := &rewriter{ops: ops, dupObject: -1}
	switch kind := ops.next() % 8; kind {
	case 4: // change one value
		all := slots(tree, func(n any) { tree = n })
		changed = changeValue(all[ops.next()%len(all)], ops)
	case 5, 6: // drop or add a member
		objects := objectsOf(tree)
		obj := objects[ops.next()%len(objects)]
		keys := slices.Sorted(maps.Keys(obj))
		if kind == 5 && len(keys) > 0 {
			k := keys[ops.next()%len(keys)]
			delete(obj, k)
			changed = "dropped " + k
		} else {
			obj["extra_"+strconv.Itoa(ops.next())] = json.Number("1")
			changed = "added a member"
		}
	case 7: // a duplicate key
		w.dupObject = ops.next() % len(objectsOf(tree))
		w.dupMember = ops.next()
		changed = changedDuplicate
	}
	var b strings.Builder
	w.value(&b, tree)
	return b.String(), changed
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

// slot is one value of the tree and the way to replace it.
type slot struct {
	value any
	set   func(any)
}

// slots returns every value of the tree v (set replaces it), v first, then
// members in sorted key order and items in order.
func slots(v any, set func(any)) []slot {
	out := []slot{{v, set}}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, slots(x[k], func(n any) { x[k] = n })...)
		}
	case []any:
		for i := range x {
			out = append(out, slots(x[i], func(n any) { x[i] = n })...)
		}
	}
	return out
}

func objectsOf(v any) []map[string]any {
	var out []map[string]any
	switch x := v.(type) {
	case map[string]any:
		out = append(out, x)
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, objectsOf(x[k])...)
		}
	case []any:
		for _, e := range x {
			out = append(out, objectsOf(e)...)
		}
	}
	return out
}

// changeValue replaces the slot's value by a different JSON value and names
// the change.
func changeValue(n slot, ops *opStream) string {
	c := ops.next()
	switch x := n.value.(type) {
	case string:
		switch c % 3 {
		case 0:
			n.set(x + []string{"x", " ", "é", "\u0000"}[ops.next()%4])
			return "a string lengthened"
		case 1:
			n.set(nil)
			return "a string became null"
		}
		n.set(json.Number("1"))
		return "a string became a number"
	case json.Number:
		switch c % 4 {
		case 0:
			i, _ := strconv.Atoi(string(x)) // the contract's numbers are integers
			n.set(json.Number(strconv.Itoa(i + 1 + ops.next())))
			return "a number increased"
		case 1:
			n.set(json.Number("-" + string(x)))
			return "a number negated"
		case 2:
			n.set(json.Number(string(x) + strings.Repeat("0", 1+ops.next()%3)))
			return "a number scaled"
		}
		n.set(string(x))
		return "a number became a string"
	case bool:
		if c%2 == 0 {
			n.set(!x)
			return "a boolean flipped"
		}
		n.set(json.Number("1"))
		return "a boolean became 1"
	case nil:
		n.set(false)
		return "null became false"
	case map[string]any:
		if c%2 == 0 {
			n.set([]any{})
			return "an object became an array"
		}
		n.set("{}")
		return "an object became a string"
	case []any:
		if c%2 == 0 && len(x) > 1 {
			r := slices.Clone(x)
			slices.Reverse(r)
			n.set(r)
			return "an array reversed"
		}
		n.set(map[string]any{})
		return "an array became an object"
	}
	panic(fmt.Sprintf("a value of type %T", n.value))
}

// rewriter writes a tree as JSON with spellings chosen by ops.
type rewriter struct {
	ops       *opStream
	objects   int // objects written so far, in writing order
	dupObject int // the object that writes one member twice, or -1
	dupMember int
}

// space writes white space between tokens: none by default.
func (w *rewriter) space(b *strings.Builder) {
	b.WriteString([]string{"", " ", "\n", "\t", "\r\n", "\n    ", "  "}[w.ops.next()%7])
}

func (w *rewriter) value(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		rot := w.ops.next()
		if len(keys) > 0 {
			keys = append(keys[rot%len(keys):], keys[:rot%len(keys)]...)
		}
		if rot&0x80 != 0 {
			slices.Reverse(keys)
		}
		if w.objects == w.dupObject && len(keys) > 0 {
			k := keys[w.dupMember%len(keys)]
			keys = slices.Insert(keys, w.dupMember/len(keys)%len(keys), k)
		}
		w.objects++
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			w.space(b)
			w.str(b, k)
			w.space(b)
			b.WriteByte(':')
			w.space(b)
			w.value(b, x[k])
			w.space(b)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			w.space(b)
			w.value(b, e)
			w.space(b)
		}
		b.WriteByte(']')
	case string:
		w.str(b, x)
	case json.Number:
		b.WriteString(w.number(string(x)))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	}
}

// str writes a string, escaping some of its characters in one of the ways
// JSON allows.
func (w *rewriter) str(b *strings.Builder, s string) {
	how := w.ops.next()
	b.WriteByte('"')
	for i, r := range s {
		escape := how%3 != 0 && (i+how)%(how%5+1) == 0
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || escape && r < 0x10000:
			format := `\u%04x`
			if how&0x40 != 0 {
				format = `\u%04X`
			}
			fmt.Fprintf(b, format, r)
		case escape && r == '/':
			b.WriteString(`\/`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// number spells a number literal another way with the same exact value.
func (w *rewriter) number(lit string) string {
	d, ok := jsonvaluetest.ParseNumber(lit)
	if !ok || !d.Exp.IsInt64() {
		return lit
	}
	sign := ""
	if d.Neg {
		sign = "-"
	}
	if d.Digits == "" {
		return sign + []string{"0", "0.0", "0e0", "0.000E-2", "-0"}[w.ops.next()%5]
	}
	zeros := w.ops.next() % 4
	m := d.Digits + strings.Repeat("0", zeros)
	e := int(d.Exp.Int64()) - zeros
	expo := func(x int) string {
		mark := []string{"e", "E", "e+", "E+", "e0", "E+0"}[w.ops.next()%6]
		if x < 0 {
			mark = strings.TrimRight(strings.TrimRight(mark, "0"), "+") + "-"
			x = -x
		}
		return mark + strconv.Itoa(x)
	}
	switch w.ops.next() % 4 {
	case 1: // d.ddd × 10^x
		frac := ""
		if len(m) > 1 {
			frac = "." + m[1:]
		}
		return sign + m[:1] + frac + expo(e+len(m)-1)
	case 2: // the digits × 10^e
		return sign + m + expo(e)
	case 3: // 0.digits × 10^x
		return sign + "0." + m + expo(e+len(m))
	}
	// Plain notation.
	switch {
	case e >= 0:
		return sign + m + strings.Repeat("0", e)
	case len(m) > -e:
		return sign + m[:len(m)+e] + "." + m[len(m)+e:]
	}
	return sign + "0." + strings.Repeat("0", -e-len(m)) + m
}
