package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// An answer in parts. A list of every pod of a large cluster is 105 MB of
// JSON at 50,000 pods. Made whole by the host before it is sent, it would
// cost the server that much and more while the worker reads it; sent as it
// is made, page by page, the server holds one page at a time and the
// worker gathers the pages where it keeps answers (answerbuf.go), counted
// against the script's memory limit as they come.

// Parts takes one part of an answer: a JSON array. The answer the script
// gets is one array of every part's items, in order.
type Parts func(part json.RawMessage) error

type partsKey struct{}

// PartsOf returns how a HostFunc may send its answer in parts, or nil when
// the execution takes answers only whole (it runs in the server's process,
// where a whole answer costs no copy). A host that sends parts returns a
// nil answer and a nil error once the last is sent: the script then gets
// the array of every part's items ([] if no part had any). A host that
// fails after sending parts returns its error: the script gets only the
// error. A Parts error means the execution can take no more (it ended, or
// the answer passed its limit): stop and return it.
func PartsOf(ctx context.Context) Parts {
	p, _ := ctx.Value(partsKey{}).(Parts)
	return p
}

func withParts(ctx context.Context, p Parts) context.Context {
	return context.WithValue(ctx, partsKey{}, p)
}

// errPartsAndWhole is a host's mistake: it sent parts and then a whole
// answer.
var errPartsAndWhole = errors.New("the operation sent its answer in parts and then whole")

// partsWriter sends the parts of one call's answer to a worker, each as a
// message saying its size ("part") followed by the items of the part's
// array, and then the message that ends the answer ("parts").
type partsWriter struct {
	w  *worker
	id json.RawMessage

	mu   sync.Mutex
	sent bool
	err  error
}

// send writes one part's items.
func (pw *partsWriter) send(part json.RawMessage) error {
	items, err := arrayItems(part)
	if err != nil {
		return err
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.err != nil {
		return pw.err
	}
	pw.sent = true
	if len(items) == 0 {
		return nil
	}
	pw.w.writeMu.Lock()
	defer pw.w.writeMu.Unlock()
	for _, b := range [][]byte{[]byte(`{"jsonrpc":"2.0","id":`), pw.id, []byte(`,"part":true,"resultBytes":` + strconv.Itoa(len(items)) + "}\n"), items, []byte("\n")} {
		if _, err := pw.w.in.Write(b); err != nil {
			pw.err = fmt.Errorf("the script's worker is gone: %w", err)
			return pw.err
		}
	}
	return nil
}

// arrayItems is what lies between a JSON array's brackets, without the
// space around it.
func arrayItems(part json.RawMessage) ([]byte, error) {
	b := bytes.TrimSpace(part)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, errors.New("a part of an answer is not a JSON array")
	}
	return bytes.TrimSpace(b[1 : len(b)-1]), nil
}

// wasSent says whether any part was sent, and stops further ones.
func (pw *partsWriter) wasSent() bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.err == nil {
		pw.err = errors.New("the answer has ended")
	}
	return pw.sent
}

// gatherMax is the most an answer in parts may hold when the worker has no
// memory limit.
const gatherMax = 1 << 30
