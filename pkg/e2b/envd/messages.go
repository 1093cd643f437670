package envd

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// The messages of envd's process and filesystem services in protobuf's JSON mapping (field
// names in lowerCamelCase, bytes in base64, 64-bit integers as strings, enums by name), written
// from the schemas the SDK carries. Only what the SDK sends or reads is declared; unknown
// request fields are ignored, as newer SDKs may add some.

// uint32Value is a protobuf uint32 in JSON: a number, or a decimal string.
type uint32Value uint32

func (v *uint32Value) UnmarshalJSON(b []byte) error {
	var n uint32
	if err := json.Unmarshal(b, &n); err == nil {
		*v = uint32Value(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errorf(codeInvalidArgument, "%s is not an unsigned 32-bit integer", b)
	}
	u, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return errorf(codeInvalidArgument, "%q is not an unsigned 32-bit integer", s)
	}
	*v = uint32Value(u)
	return nil
}

// bytesValue is protobuf bytes in JSON: base64, standard or URL-safe, padded or not.
type bytesValue []byte

func (v *bytesValue) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errorf(codeInvalidArgument, "%.40s is not a base64 string", b)
	}
	s = strings.TrimRight(s, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	out, err := enc.DecodeString(s)
	if err != nil {
		return errorf(codeInvalidArgument, "bytes field is not valid base64: %v", err)
	}
	*v = out
	return nil
}

type ptySize struct {
	Cols uint32Value `json:"cols"`
	Rows uint32Value `json:"rows"`
}

type ptyConfig struct {
	Size *ptySize `json:"size,omitempty"`
}

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args"`
	Envs map[string]string `json:"envs"`
	Cwd  *string           `json:"cwd,omitempty"`
}

type startRequest struct {
	Process *processConfig `json:"process"`
	Pty     *ptyConfig     `json:"pty"`
	Tag     *string        `json:"tag"`
	Stdin   *bool          `json:"stdin"`
}

// processSelector names a process by pid or by tag (a oneof).
type processSelector struct {
	Pid *uint32Value `json:"pid"`
	Tag *string      `json:"tag"`
}

type connectRequest struct {
	Process *processSelector `json:"process"`
}

type processInput struct {
	Stdin bytesValue `json:"stdin"`
	Pty   bytesValue `json:"pty"`
}

type sendInputRequest struct {
	Process *processSelector `json:"process"`
	Input   *processInput    `json:"input"`
}

// signal is the Signal enum: its name, or its number.
type signal int32

const (
	sigKill signal = 9
	sigTerm signal = 15
)

func (s *signal) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		switch name {
		case "SIGNAL_SIGKILL":
			*s = sigKill
		case "SIGNAL_SIGTERM":
			*s = sigTerm
		case "SIGNAL_UNSPECIFIED":
			*s = 0
		default:
			return errorf(codeInvalidArgument, "signal %q is not one of SIGNAL_SIGTERM, SIGNAL_SIGKILL", name)
		}
		return nil
	}
	var n int32
	if err := json.Unmarshal(b, &n); err != nil {
		return errorf(codeInvalidArgument, "signal %s is neither a name nor a number", b)
	}
	*s = signal(n)
	return nil
}

type sendSignalRequest struct {
	Process *processSelector `json:"process"`
	Signal  signal           `json:"signal"`
}

type closeStdinRequest struct {
	Process *processSelector `json:"process"`
}

type updateRequest struct {
	Process *processSelector `json:"process"`
	Pty     *ptyConfig       `json:"pty"`
}

type processInfo struct {
	Config *processConfig `json:"config"`
	Pid    uint32         `json:"pid"`
	Tag    *string        `json:"tag,omitempty"`
}

type listResponse struct {
	Processes []processInfo `json:"processes"`
}

// processEvent is one event of a process's stream (a oneof: exactly one field is set).
type processEvent struct {
	Start     *startEvent `json:"start,omitempty"`
	Data      *dataEvent  `json:"data,omitempty"`
	End       *endEvent   `json:"end,omitempty"`
	Keepalive *struct{}   `json:"keepalive,omitempty"`
}

type startEvent struct {
	Pid uint32 `json:"pid"`
}

type dataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Pty    []byte `json:"pty,omitempty"`
}

type endEvent struct {
	ExitCode int32   `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

// eventResponse is StartResponse and ConnectResponse alike.
type eventResponse struct {
	Event processEvent `json:"event"`
}

type empty struct{}

// Filesystem service.

type pathRequest struct {
	Path string `json:"path"`
}

type listDirRequest struct {
	Path  string      `json:"path"`
	Depth uint32Value `json:"depth"`
}

type moveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

type entryInfo struct {
	Name          string  `json:"name"`
	Type          string  `json:"type"`
	Path          string  `json:"path"`
	Size          string  `json:"size"`
	Mode          uint32  `json:"mode"`
	Permissions   string  `json:"permissions"`
	Owner         string  `json:"owner"`
	Group         string  `json:"group"`
	ModifiedTime  string  `json:"modifiedTime,omitempty"`
	SymlinkTarget *string `json:"symlinkTarget,omitempty"`
}

type entryResponse struct {
	Entry *entryInfo `json:"entry"`
}

type listDirResponse struct {
	Entries []entryInfo `json:"entries"`
}

// File types by name, as FileType's JSON mapping spells them.
const (
	fileTypeFile      = "FILE_TYPE_FILE"
	fileTypeDirectory = "FILE_TYPE_DIRECTORY"
	fileTypeSymlink   = "FILE_TYPE_SYMLINK"
)
