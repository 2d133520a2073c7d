package awshost

import (
	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/payload/s3presign"
	"github.com/sortie-run/sortie/payload/sealed"
)

// payloadGranter is the engine Sealer of the reconciler function when env
// names a payload bucket (nil without one): a sealed.Granter that grants
// every attempt it relaunches the presigned URLs a host would grant (the
// run's variables, the attempt's result), signed with the function's
// credentials by package payload/s3presign (Signature Version 4 alone:
// the bootstrap links no S3 client) and sealed with the keyring. A bucket
// URL the signer cannot follow is a [*sortie.ValidationError] naming
// payload_bucket.
func (h *Host) payloadGranter(env *fnlambda.Env) (sortie.Sealer, error) {
	if env.PayloadBucket == "" {
		return nil, nil
	}
	kr := h.Sealer()
	if kr == nil {
		return nil, sortie.Invalidf("payload_bucket", "needs the keyring (%s) the workers hold, which seals the URLs", fnlambda.EnvKMSKeys)
	}
	signer, err := s3presign.New(env.PayloadBucket, h.aws.Credentials, &s3presign.Options{Region: h.aws.Region,
		Limits: sortie.PayloadLimits{MaxPayloadBytes: env.MaxPayloadBytes}})
	if err != nil {
		return nil, err
	}
	return sealed.NewGranter(signer, kr), nil
}
