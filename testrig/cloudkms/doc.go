// Package cloudkms is an in-process Google Cloud KMS for tests: a gRPC
// server on loopback implementing the Encrypt and Decrypt methods of the
// Cloud KMS API (kmspb.KeyManagementServiceServer, the service the real
// client of cloud.google.com/go/kms/apiv1 calls), since no emulator exists.
//
// Each key is a symmetric ENCRYPT_DECRYPT key with numbered versions, each
// an AES-256-GCM key (Tink's aead/subtle). Encrypt uses the key's primary
// version, binds the request's additional authenticated data and answers
// with the version's name and CRC32C checksums, as Cloud KMS does; Decrypt
// takes the version from the ciphertext, so [Server.Rotate] (a new primary
// version) leaves older ciphertexts decryptable, as Cloud KMS's automatic
// rotation does. A ciphertext or AAD it refuses is InvalidArgument; an
// unknown key is NotFound.
//
// [Start] serves until the test ends; [Server.Endpoint] is its host:port
// (give clients [Server.ClientOptions]: no TLS, no credentials), and
// [Server.Calls] lists the requests it answered, so a test can tell who
// opened what.
package cloudkms
