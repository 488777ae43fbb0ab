package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// obj is a JSON object that keeps its key order, so rewriting a user's
// settings.json changes only what we mean to change.
type obj []kv

type kv struct {
	Key string
	Val json.RawMessage
}

func parseObj(data []byte) (obj, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return obj{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var o obj
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, kv{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	return o, nil
}

func (o obj) get(key string) (json.RawMessage, bool) {
	for _, e := range o {
		if e.Key == key {
			return e.Val, true
		}
	}
	return nil, false
}

func (o *obj) set(key string, v json.RawMessage) {
	for i, e := range *o {
		if e.Key == key {
			(*o)[i].Val = v
			return
		}
	}
	*o = append(*o, kv{key, v})
}

func (o *obj) del(key string) {
	for i, e := range *o {
		if e.Key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

// setOrDel sets key to the object v, or deletes key when v is empty.
func (o *obj) setOrDel(key string, v obj) error {
	if len(v) == 0 {
		o.del(key)
		return nil
	}
	b, err := v.marshal()
	if err != nil {
		return err
	}
	o.set(key, json.RawMessage(bytes.TrimSpace(b)))
	return nil
}

func (o obj) marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(e.Val)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func rawJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return json.RawMessage(bytes.TrimSpace(b.Bytes()))
}

func equalJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// readObjFile reads the JSON object file at path, which may not exist
// yet, and the object under key in it (nil when absent). What does not
// parse is an error naming the file: a plan refuses before anything is
// written.
func readObjFile(path, key string) (old []byte, doc, sub obj, err error) {
	old, err = os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if doc, err = parseObj(old); err != nil {
		return old, nil, nil, fmt.Errorf("%s is not valid JSON (%v); fix it and run again", path, err)
	}
	if raw, ok := doc.get(key); ok {
		if sub, err = parseObj(raw); err != nil {
			return old, nil, nil, fmt.Errorf("%s: %q is not a JSON object (%v); fix it and run again", path, key, err)
		}
	}
	return old, doc, sub, nil
}
