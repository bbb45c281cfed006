package kubernetes

import (
	"errors"
	"net/http"

	"github.com/kubecode/kubecode/catalog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// wrapError converts client-go errors into catalog.CallError so the script
// sees the status code (403, 404, ...) and reason.
func wrapError(err error) error {
	if err == nil {
		return nil
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		code := int(s.Code)
		if code == 0 {
			code = http.StatusInternalServerError
		}
		return &catalog.CallError{Status: code, Reason: string(s.Reason), Message: s.Message}
	}
	return err
}
