// Package jupyter runs notebooks without Python: it starts a Jupyter kernel
// (GoNB), speaks the Jupyter messaging protocol to it over ZeroMQ
// (github.com/go-zeromq/zmq4, the pure-Go ZeroMQ that GoNB itself uses),
// executes the code cells in order, and writes the executed notebook with
// its outputs in nbformat 4, as `jupyter nbconvert --execute` would.
//
// `lab nbrun` is its command line; `make test` and `make notebooks` run every
// notebook through it, and the GPU machine, which has no Python Jupyter,
// runs the main notebooks with it (make gpu-notebooks).
//
// The protocol: https://jupyter-client.readthedocs.io/en/latest/messaging.html.
// A message is a list of ZeroMQ frames:
//
//	[routing ids...] "<IDS|MSG>" signature header parent_header metadata content
//
// where the last four are JSON and the signature is the hex HMAC-SHA256 of
// those four with the key of the connection file.
package jupyter

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// delimiter separates the routing ids from the message proper.
const delimiter = "<IDS|MSG>"

// protocolVersion is the messaging protocol version this client speaks.
const protocolVersion = "5.3"

// header is a message's header (and, in replies, its parent_header).
type header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// message is one decoded protocol message.
type message struct {
	Header   header
	Parent   header
	Metadata map[string]any
	Content  json.RawMessage
}

// newID returns a random identifier (32 hex digits), for message ids,
// sessions and signing keys.
func newID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// sign is the hex HMAC-SHA256 of the parts with key.
func sign(key []byte, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p)
	}
	return []byte(hex.EncodeToString(mac.Sum(nil)))
}

// encode builds the frames of a new message of type msgType in session,
// signed with key, and returns them with the message's id.
func encode(key []byte, session, msgType string, content any) (frames [][]byte, id string, err error) {
	id = newID()
	h, err := json.Marshal(header{
		MsgID: id, Session: session, Username: "gpulab", MsgType: msgType, Version: protocolVersion,
		Date: time.Now().UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return nil, "", err
	}
	c, err := json.Marshal(content)
	if err != nil {
		return nil, "", fmt.Errorf("encoding %s content: %w", msgType, err)
	}
	parent, metadata := []byte("{}"), []byte("{}")
	return [][]byte{[]byte(delimiter), sign(key, h, parent, metadata, c), h, parent, metadata, c}, id, nil
}

// decode parses the frames of a received message and checks its signature.
func decode(key []byte, frames [][]byte) (*message, error) {
	i := 0
	for i < len(frames) && string(frames[i]) != delimiter {
		i++
	}
	if len(frames)-i < 6 {
		return nil, fmt.Errorf("malformed message: %d frames, no %q followed by 5 frames", len(frames), delimiter)
	}
	sig, parts := frames[i+1], frames[i+2:i+6]
	if !hmac.Equal(sig, sign(key, parts...)) {
		return nil, fmt.Errorf("message with a wrong signature (%.16s...): not signed with this connection's key", sig)
	}
	m := &message{Content: json.RawMessage(parts[3])}
	for j, dst := range []any{&m.Header, &m.Parent, &m.Metadata} {
		if err := json.Unmarshal(parts[j], dst); err != nil {
			return nil, fmt.Errorf("message frame %d is not JSON: %w", j+2, err)
		}
	}
	return m, nil
}
