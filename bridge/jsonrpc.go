package bridge

import "encoding/json"

// Request is a JSON-RPC 2.0 request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: exactly one of Result and Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

// ErrorData carries what a script needs to react to a failed call.
type ErrorData struct {
	Tool        string   `json:"tool,omitempty"`
	Status      int      `json:"status,omitempty"` // HTTP status from the API server, e.g. 403
	Reason      string   `json:"reason,omitempty"` // e.g. "Forbidden", "NotFound", "Invalid"
	Field       string   `json:"field,omitempty"`  // the offending argument, for invalid calls
	Suggestions []string `json:"suggestions,omitempty"`
}

// JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeOperationFailed: the operation ran and failed (API error).
	CodeOperationFailed = -32000
)

// ReasonUnknownOperation is ErrorData.Reason for a call to an operation no
// provider defines.
const ReasonUnknownOperation = "UnknownOperation"

// Methods the bridge serves.
const (
	MethodCall = "tools/call" // params: CallParams
	MethodList = "tools/list" // result: []string of operation names
)

// CallParams are the params of tools/call.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

func errorResponse(id json.RawMessage, code int, msg string, data *ErrorData) []byte {
	b, _ := json.Marshal(Response{JSONRPC: "2.0", ID: idOrNull(id), Error: &RPCError{Code: code, Message: msg, Data: data}})
	return b
}

func resultResponse(id json.RawMessage, result json.RawMessage) []byte {
	b, _ := json.Marshal(Response{JSONRPC: "2.0", ID: idOrNull(id), Result: result})
	return b
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}
