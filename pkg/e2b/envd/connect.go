package envd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Connect protocol as the E2B SDK speaks it: JSON only (its transport sets
// useBinaryFormat: false), unary calls as a bare JSON body ("application/json"), server-streaming
// calls as enveloped JSON messages ("application/connect+json"), the stream closed by an
// end-of-stream envelope carrying the error if any.
const (
	contentTypeUnaryJSON  = "application/json"
	contentTypeStreamJSON = "application/connect+json"

	// flagCompressed marks a compressed envelope (we advertise no compression); flagEndStream
	// the last envelope of a response stream.
	flagCompressed = 0x01
	flagEndStream  = 0x02

	// maxMessageBytes bounds one request message (stdin sent in one call, a long command line).
	maxMessageBytes = 8 << 20
	envelopeHeader  = 5
)

// Connect error codes the data plane answers with.
const (
	codeCanceled           = "canceled"
	codeInvalidArgument    = "invalid_argument"
	codeDeadlineExceeded   = "deadline_exceeded"
	codeNotFound           = "not_found"
	codeAlreadyExists      = "already_exists"
	codePermissionDenied   = "permission_denied"
	codeResourceExhausted  = "resource_exhausted"
	codeFailedPrecondition = "failed_precondition"
	codeUnimplemented      = "unimplemented"
	codeInternal           = "internal"
	codeUnavailable        = "unavailable"
	codeUnauthenticated    = "unauthenticated"
)

// httpStatusOfCode is the HTTP status of a unary error, from the Connect protocol's table.
var httpStatusOfCode = map[string]int{
	codeCanceled:           499,
	codeInvalidArgument:    http.StatusBadRequest,
	codeDeadlineExceeded:   http.StatusGatewayTimeout,
	codeNotFound:           http.StatusNotFound,
	codeAlreadyExists:      http.StatusConflict,
	codePermissionDenied:   http.StatusForbidden,
	codeResourceExhausted:  http.StatusTooManyRequests,
	codeFailedPrecondition: http.StatusBadRequest,
	codeUnimplemented:      http.StatusNotImplemented,
	codeInternal:           http.StatusInternalServerError,
	codeUnavailable:        http.StatusServiceUnavailable,
	codeUnauthenticated:    http.StatusUnauthorized,
}

// rpcError is an error with its Connect code; its message is what the SDK shows the user.
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// fileStatus, when set, is the HTTP status /files answers rather than the code's own.
	fileStatus int
}

func (e *rpcError) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asRPCError gives any error its Connect code: an *rpcError keeps its own, an ended context
// says why, a Resolver's *StatusError maps its HTTP status, anything else is internal.
func asRPCError(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errorf(codeDeadlineExceeded, "the request's deadline passed")
	}
	if errors.Is(err, context.Canceled) {
		return errorf(codeCanceled, "the request was canceled")
	}
	var se *StatusError
	if errors.As(err, &se) {
		code := codeInternal
		switch se.Code {
		case http.StatusBadRequest:
			code = codeInvalidArgument
		case http.StatusUnauthorized:
			code = codeUnauthenticated
		case http.StatusForbidden:
			code = codePermissionDenied
		case http.StatusNotFound:
			code = codeNotFound
		case http.StatusTooManyRequests:
			code = codeResourceExhausted
		case http.StatusBadGateway, http.StatusServiceUnavailable:
			code = codeUnavailable
		}
		return &rpcError{Code: code, Message: se.Message}
	}
	return &rpcError{Code: codeInternal, Message: err.Error()}
}

// writeUnaryError answers a unary call's error as Connect does: the code's HTTP status and a
// JSON body with the code and message.
func writeUnaryError(w http.ResponseWriter, err error) {
	re := asRPCError(err)
	status, ok := httpStatusOfCode[re.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", contentTypeUnaryJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(re)
}

// decodeJSON reads one message; its errors name what was wrong with the body.
func decodeJSON(data []byte, into any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		// An empty body is the empty message.
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(into); err != nil {
		return errorf(codeInvalidArgument, "the request message is not valid JSON for its type: %v", err)
	}
	if dec.More() {
		return errorf(codeInvalidArgument, "the request message has data after its JSON object")
	}
	return nil
}

// readUnary reads a unary request's JSON body, bounded.
func readUnary(r *http.Request, into any) error {
	if err := checkContentType(r, contentTypeUnaryJSON); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxMessageBytes+1))
	if err != nil {
		return errorf(codeInvalidArgument, "reading the request body: %v", err)
	}
	if len(data) > maxMessageBytes {
		return errorf(codeResourceExhausted, "the request message is larger than %d bytes", maxMessageBytes)
	}
	return decodeJSON(data, into)
}

// readEnvelope reads one enveloped message of at most limit bytes; io.EOF when the body ends
// cleanly before an envelope.
func readEnvelope(r io.Reader, limit int) (flags byte, data []byte, err error) {
	var head [envelopeHeader]byte
	if n, err := io.ReadFull(r, head[:]); err != nil {
		if err == io.EOF {
			return 0, nil, io.EOF
		}
		return 0, nil, errorf(codeInvalidArgument, "the request body ends inside an envelope's 5-byte header (%d bytes)", n)
	}
	size := binary.BigEndian.Uint32(head[1:])
	if uint64(size) > uint64(limit) {
		return 0, nil, errorf(codeResourceExhausted, "the request envelope announces %d bytes, more than the %d allowed", size, limit)
	}
	data = make([]byte, size)
	if n, err := io.ReadFull(r, data); err != nil {
		return 0, nil, errorf(codeInvalidArgument, "the request envelope announces %d bytes but the body ends after %d", size, n)
	}
	return head[0], data, nil
}

// readStreamRequest reads the single request message of a server-streaming call: exactly one
// uncompressed, non-final envelope and nothing after it.
func readStreamRequest(r *http.Request, into any) error {
	if err := checkContentType(r, contentTypeStreamJSON); err != nil {
		return err
	}
	body := io.LimitReader(r.Body, maxMessageBytes+envelopeHeader+1)
	flags, data, err := readEnvelope(body, maxMessageBytes)
	if err == io.EOF {
		return errorf(codeInvalidArgument, "the request body is empty; a streaming call needs one enveloped message")
	}
	if err != nil {
		return err
	}
	if flags&flagCompressed != 0 {
		return errorf(codeUnimplemented, "compressed envelopes are not supported; send the message uncompressed")
	}
	if flags != 0 {
		return errorf(codeInvalidArgument, "the request envelope has unknown flags %#x", flags)
	}
	if n, _ := io.Copy(io.Discard, io.LimitReader(body, 1)); n > 0 {
		return errorf(codeInvalidArgument, "the request body has data after its one envelope")
	}
	return decodeJSON(data, into)
}

func checkContentType(r *http.Request, want string) error {
	full := r.Header.Get("Content-Type")
	got, _, _ := strings.Cut(full, ";")
	if strings.TrimSpace(got) != want {
		return errorf(codeInvalidArgument, "content type %q is not served here; this call takes %q (Connect with JSON)", full, want)
	}
	return nil
}

// requestTimeout is the deadline the client announced in Connect-Timeout-Ms, or 0.
func requestTimeout(r *http.Request) (time.Duration, error) {
	v := r.Header.Get("Connect-Timeout-Ms")
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseUint(v, 10, 63)
	if err != nil || len(v) > 10 {
		return 0, errorf(codeInvalidArgument, "header Connect-Timeout-Ms %q is not a positive integer of at most 10 digits", v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// streamWriter sends a server stream's messages, each flushed at once.
type streamWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newStreamWriter(w http.ResponseWriter) *streamWriter {
	w.Header().Set("Content-Type", contentTypeStreamJSON)
	w.WriteHeader(http.StatusOK)
	return &streamWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *streamWriter) envelope(flags byte, msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	buf := make([]byte, envelopeHeader+len(data))
	buf[0] = flags
	binary.BigEndian.PutUint32(buf[1:], uint32(len(data)))
	copy(buf[envelopeHeader:], data)
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// send writes one response message.
func (s *streamWriter) send(msg any) error { return s.envelope(0, msg) }

// end closes the stream, with err (if any) as its error.
func (s *streamWriter) end(err error) {
	var end struct {
		Error *rpcError `json:"error,omitempty"`
	}
	if err != nil {
		end.Error = asRPCError(err)
	}
	_ = s.envelope(flagEndStream, end)
}
