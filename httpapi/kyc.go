package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/tenancy"
)

// The KYC webhook: an outside verification service reports the state of an
// org or a user. It carries no API key; instead the body is signed with a
// secret shared with the service (serve --kyc-webhook-secret):
//
//	X-Sbx-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">
//
// Several v1 entries may be sent (while a secret is rotated); one must
// match. A timestamp more than MaxWebhookSkew from the server's clock is
// refused, so that a captured request cannot be replayed later; within it,
// an event decided before the state recorded is answered but not applied.
// Without a secret configured, the route answers 503.

// SignatureHeader carries the KYC webhook's signature.
const SignatureHeader = "X-Sbx-Signature"

// MaxWebhookSkew is how far a webhook's timestamp may be from the server's clock.
const MaxWebhookSkew = 5 * time.Minute

// SignWebhook returns the X-Sbx-Signature value for body sent at t.
func SignWebhook(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(webhookMAC(secret, ts, body))
}

func webhookMAC(secret, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return mac.Sum(nil)
}

// checkSignature verifies a signature header against body and the server's now.
func checkSignature(header, secret string, body []byte, now time.Time) (time.Time, error) {
	const format = SignatureHeader + ` must be "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">"`
	if header == "" {
		return time.Time{}, sbx.Errorf(sbx.EUnauthorized, "the KYC webhook needs a signature: %s", format)
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return time.Time{}, sbx.Errorf(sbx.EUnauthorized, "%s", format)
	}
	want := webhookMAC(secret, ts, body)
	ok := false
	for _, sig := range sigs {
		ok = ok || hmac.Equal(sig, want)
	}
	if !ok {
		return time.Time{}, sbx.Errorf(sbx.EUnauthorized, "the signature does not match: sign \"<t>.<body>\" with HMAC-SHA256 and the secret shared with this sbx")
	}
	at := time.Unix(secs, 0).UTC()
	if skew := now.Sub(at).Abs(); skew > MaxWebhookSkew {
		return time.Time{}, sbx.Errorf(sbx.EUnauthorized, "the signature's timestamp is %s from this server's clock, more than the %s allowed: sign each request when it is sent",
			skew.Truncate(time.Second), MaxWebhookSkew)
	}
	return at, nil
}

func (s *Server) kycWebhook(w http.ResponseWriter, r *http.Request) {
	if s.cfg.KYCWebhookSecret == "" {
		s.error(w, r, sbx.Errorf(sbx.EUnavailable, "the KYC webhook is off on this server: start sbx serve with --kyc-webhook-secret (or $SBX_KYC_WEBHOOK_SECRET)"))
		return
	}
	data, err := readJSON(w, r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	at, err := checkSignature(r.Header.Get(SignatureHeader), s.cfg.KYCWebhookSecret, data, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	var ev apiv1.KYCEvent
	if err := decodeStrict(data, &ev); err != nil {
		s.error(w, r, err)
		return
	}
	v, err := s.tenancy.RecordVerification(r.Context(), tenancy.Verification{Subject: ev.Subject, ID: ev.ID, Status: sbx.KYCStatus(ev.Status), At: at})
	if err != nil {
		s.error(w, r, err)
		return
	}
	if !v.Applied {
		s.log.Info("KYC webhook: a state decided before the one recorded was not applied", "subject", ev.Subject, "id", ev.ID, "status", ev.Status, "at", at)
	}
	writeJSON(w, http.StatusOK, apiv1.KYCResult{Subject: v.Subject, ID: v.ID, Status: string(v.Status), Applied: v.Applied})
}
