package sign_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sortie-run/sortie/crypto/sign"
)

// Sign the Standard Webhooks reference message, verify it, and see the
// replay cache refuse it the second time.
func ExampleSigner() {
	s, err := sign.NewSigner("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := http.Header{}
	if err := s.Header(h, specID, time.Unix(specTS, 0), []byte(specBody)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Get(sign.HeaderSignature))
	v, _ := sign.NewVerifier([]string{specSecret}, &sign.VerifierOptions{Now: func() time.Time { return time.Unix(specTS+60, 0) }})
	fmt.Println(v.Verify(h, []byte(specBody)))
	fmt.Println(v.Verify(h, []byte(specBody)))
	// Output:
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// <nil>
	// verify webhook msg_p5jXN8AQM9LWM0D4loKWxJek: webhook message replayed
}
