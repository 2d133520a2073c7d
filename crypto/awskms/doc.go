// Package awskms is the AWS KMS key-encryption key of package envelope: a
// [KEK] that makes data keys with KMS GenerateDataKey and unwraps them with
// KMS Decrypt (aws-sdk-go-v2), both carrying the envelope's encryption
// context (purpose and agent; run ID and attempt too when the data-key
// cache is off). KMS binds the context to the wrapped key, CloudTrail logs
// it with every call, and a key policy can require it, for example letting
// workers decrypt only with purpose "invocation-config":
//
//	"Condition": {"StringEquals": {"kms:EncryptionContext:purpose": "invocation-config"}}
//
// [KEK.Requests] counts the KMS requests made. Errors wrap the SDK's
// error once; a refused ciphertext also wraps envelope.ErrAuth, and
// throttling, network failures and KMS faults wrap sortie.ErrUnavailable.
package awskms
