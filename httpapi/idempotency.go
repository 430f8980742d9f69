package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// once reads the request's Idempotency-Key (nil without one) for what it
// asks, v: a retry with the same key and an equal request is the same
// request.
func once(r *http.Request, v any) (*sbx.Once, error) {
	key := r.Header.Get(apiv1.IdempotencyHeader)
	if key == "" {
		return nil, nil
	}
	if len(key) > 255 || !printable(key) {
		return nil, sbx.Invalid(apiv1.IdempotencyHeader, "the %s header must be 1 to 255 printable ASCII characters, such as a UUID", apiv1.IdempotencyHeader)
	}
	asked, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(r.Method+" "+r.URL.Path+"\n"), asked...))
	return &sbx.Once{APIKeyID: caller(r).Key.ID, Key: key, Hash: hex.EncodeToString(sum[:])}, nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
