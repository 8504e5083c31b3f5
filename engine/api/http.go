package api

import (
	"encoding/json"
	"net/http"
)

// HTTPStatus is the status code of a reply carrying e.
func (e *Error) HTTPStatus() int {
	switch e.Code {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeInvalidConfig:
		return http.StatusUnprocessableEntity
	case CodeNotFound:
		return http.StatusNotFound
	case CodeForbidden, CodeNotPaired, CodePairFailed, CodePairLocked, CodeNoCode:
		return http.StatusForbidden
	case CodeModelFailed:
		return http.StatusBadGateway
	case CodeAborted, CodeMemoryOff, CodeConflict:
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// WriteJSON writes v as the JSON body of a reply with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"code":"internal","message":"encode reply"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n')) // a client that went away needs nothing more
}

// WriteError writes e as an error reply with its code's status.
func WriteError(w http.ResponseWriter, e *Error) { WriteJSON(w, e.HTTPStatus(), e) }
