package capsnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// configAlias is Config without its methods, embedded in configJSON.
type configAlias Config

// configJSON is how ParseConfig decodes a config: Input, shadowing
// Config's [3]int (which encoding/json fills from an array of any length,
// dropping the extra numbers or leaving zeros), is checked for exactly
// three numbers.
type configJSON struct {
	*configAlias
	Input json.RawMessage `json:"input"`
}

// decodeConfig decodes the JSON text b strictly (docs/reliability.md): b
// is exactly one JSON object (white space around it, nothing else), every
// key is a field's exact name (no unknown field, no other spelling, none
// twice) and input is exactly three integers. Its errors are one line
// naming the field; the caller names the source.
func decodeConfig(b []byte) (Config, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Config{}, errors.New("not a JSON object (a config is one object)")
	}
	if err := checkConfigKeys(b); err != nil {
		return Config{}, err
	}
	var c Config
	aux := configJSON{configAlias: (*configAlias)(&c)}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Config{}, fmt.Errorf("field %s: JSON %s, want %s", strings.TrimPrefix(te.Field, "configAlias."), te.Value, te.Type)
		}
		return Config{}, err
	}
	if off := dec.InputOffset(); len(bytes.TrimLeft(b[off:], " \t\r\n")) > 0 {
		return Config{}, fmt.Errorf("data after the config object (byte %d): a config is one object", off)
	}
	if aux.Input == nil {
		return c, nil // absent: Resolve refuses the zero input
	}
	var in []int
	if string(aux.Input) == "null" {
		return Config{}, errors.New("field input: null, want 3 numbers (channels, height, width)")
	}
	if err := json.Unmarshal(aux.Input, &in); err != nil {
		return Config{}, fmt.Errorf("field input: %v", err)
	}
	if len(in) != len(c.Input) {
		return Config{}, fmt.Errorf("field input: %d numbers, want 3 (channels, height, width)", len(in))
	}
	copy(c.Input[:], in)
	return c, nil
}

// maxConfigDepth bounds the nesting of a config's JSON (a real config
// nests 3 deep: the config, its convs, a conv), so that the key walk's
// memory stays bounded by the depth, not the file.
const maxConfigDepth = 16

// keyFrame is an object or array open during checkConfigKeys' walk.
type keyFrame struct {
	obj     bool
	wantKey bool
	key     string
	idx     int
	seen    map[string]bool
}

// checkConfigKeys walks the first JSON value of b token by token and
// refuses nesting deeper than maxConfigDepth, a key given twice in one
// object, spelled other than its field's exact name (encoding/json
// matches names case-insensitively and keeps the last of duplicates) or
// no field's name at all, naming where. A name of another struct's field
// (a conv's "dim") is left to the decoder's DisallowUnknownFields, syntax
// errors to the decoder, which names them.
func checkConfigKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []*keyFrame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF or a syntax error, which Decode reports
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if key, ok := tok.(string); ok {
				if err := checkKey(stack, key); err != nil {
					return err
				}
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxConfigDepth {
				return fmt.Errorf("%snested more than %d deep", keyPath(stack), maxConfigDepth)
			}
			f := &keyFrame{obj: tok == json.Delim('{'), wantKey: true}
			if f.obj {
				f.seen = map[string]bool{}
			}
			stack = append(stack, f)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return nil // the first value is over: trailing data is Decode's
			}
		}
		if top := stack[len(stack)-1]; top.obj {
			top.wantKey = true
		} else {
			top.idx++
		}
	}
}

// checkKey records key in the innermost object of stack, or refuses it.
func checkKey(stack []*keyFrame, key string) error {
	top := stack[len(stack)-1]
	where := keyPath(stack[:len(stack)-1])
	if top.seen[key] {
		return fmt.Errorf("%sfield %q twice", where, key)
	}
	names := configFieldNames()
	if !names[key] {
		for name := range names {
			if strings.EqualFold(name, key) {
				return fmt.Errorf("%sfield %q: names are case-sensitive, want %q", where, key, name)
			}
		}
		return fmt.Errorf("%sunknown field %q", where, key)
	}
	top.seen[key], top.key, top.wantKey = true, key, false
	return nil
}

// keyPath names the value the frames lead to, followed by ": "
// ("convs[1]: ", "loss: "), or is "" at the top level.
func keyPath(stack []*keyFrame) string {
	var sb strings.Builder
	for _, f := range stack {
		if f.obj {
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(f.key)
		} else {
			sb.WriteString("[" + strconv.Itoa(f.idx) + "]")
		}
	}
	if sb.Len() == 0 {
		return ""
	}
	return sb.String() + ": "
}

// configFieldNames is the set of JSON names of the fields of Config and
// of the structs it holds.
var configFieldNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, t := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[ConvConfig](), reflect.TypeFor[CapsConfig](), reflect.TypeFor[LossConfig]()} {
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			names[name] = true
		}
	}
	return names
})
