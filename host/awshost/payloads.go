package awshost

import (
	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/payload/s3presign"
	"github.com/sortie-run/sortie/payload/sealed"
)

// payloadURLs gives opts, the engine options of the reconciler or the
// trigger function, the payload bucket env names (nothing without one):
// Sealer becomes a sealed.Granter that grants every attempt the engine
// launches the presigned URLs a host would grant (the run's variables,
// the attempt's result and checkpoint), and ObjectDeleter a
// sealed.Deleter that deletes an expired run's objects through DELETE
// URLs (the reconciler's retention; the trigger deletes no run). Both
// sign with the function's credentials by package payload/s3presign
// (Signature Version 4 alone: the bootstrap links no S3 client); the
// Granter seals with the keyring. A bucket URL the signer cannot follow,
// or a bucket without the keyring, is a [*sortie.ValidationError] naming
// payload_bucket.
func (h *Host) payloadURLs(env *fnlambda.Env, opts *sortie.EngineOptions) error {
	if env.PayloadBucket == "" {
		return nil
	}
	kr := h.Sealer()
	if kr == nil {
		return sortie.Invalidf("payload_bucket", "needs the keyring (%s) the workers hold, which seals the URLs", fnlambda.EnvKMSKeys)
	}
	signer, err := s3presign.New(env.PayloadBucket, h.aws.Credentials, &s3presign.Options{Region: h.aws.Region,
		Limits: sortie.PayloadLimits{MaxPayloadBytes: env.MaxPayloadBytes}})
	if err != nil {
		return err
	}
	opts.Sealer = sealed.NewGranter(signer, kr)
	opts.ObjectDeleter = sealed.NewDeleter(signer, nil)
	return nil
}
