package envd

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzStreamRequest feeds arbitrary bodies to the parsing of a streaming call's request: it
// never panics, and anything it refuses is a Connect error with a code and a message.
func FuzzStreamRequest(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0, 0, 0, 0, 40, '{', '"', 'p', 'r', 'o', 'c', 'e', 's', 's', '"', ':', '{', '"', 'c', 'm', 'd', '"', ':', '"', 'x', '"', '}', '}'})
	f.Add([]byte{flagCompressed, 0, 0, 0, 1, 'x'})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte(`{"process":{"pid":"12"},"input":{"stdin":"aGk="}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, into := range []any{&startRequest{}, &connectRequest{}, &listDirRequest{}} {
			r := httptest.NewRequest(http.MethodPost, "/process.Process/Start", bytes.NewReader(body))
			r.Header.Set("Content-Type", contentTypeStreamJSON)
			checkRefusal(t, readStreamRequest(r, into))
		}
		for _, into := range []any{&sendInputRequest{}, &sendSignalRequest{}, &updateRequest{}, &moveRequest{}} {
			r := httptest.NewRequest(http.MethodPost, "/process.Process/SendInput", bytes.NewReader(body))
			r.Header.Set("Content-Type", contentTypeUnaryJSON)
			checkRefusal(t, readUnary(r, into))
		}
	})
}

func checkRefusal(t *testing.T, err error) {
	if err == nil {
		return
	}
	re, ok := err.(*rpcError)
	if !ok || re.Code == "" || re.Message == "" {
		t.Fatalf("refusal %T %v is not a Connect error with a code and a message", err, err)
	}
	if _, known := httpStatusOfCode[re.Code]; !known {
		t.Fatalf("refusal has unknown code %q", re.Code)
	}
}

// FuzzParseEntries feeds arbitrary sandbox output (a container may replace stat itself) to the
// parsing of entry records: it never panics, and what it accepts has sane fields.
func FuzzParseEntries(f *testing.F) {
	f.Add([]byte("81a4 5 1700000000 root root 6:/a/b c0:\n"))
	f.Add([]byte("a1ff 1 1700000000 root root 2:/l1:b\n41ed 4096 0 u g 1:/0:\n"))
	f.Add([]byte("81a4 5 1 r r 99:/x0:\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		entries, err := parseEntries(out)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Type == fileTypeSymlink && e.SymlinkTarget == nil {
				t.Fatalf("symlink %+v without a target", e)
			}
			if len(e.Permissions) != 10 {
				t.Fatalf("permissions %q", e.Permissions)
			}
		}
	})
}
