// Package keyring is the one key-ID ring every key rotation in Sortie
// follows. A [Ring] holds keys of one kind by key ID: one primary key signs
// or seals what is made now, and every key in the ring verifies or opens,
// so what a key made before a rotation keeps working until that key is
// removed.
//
// Its rules, the same for every kind of key:
//
//   - a key ID is checked against the kind's pattern ([Rule]); a bad ID, a
//     key the kind refuses, an ID already held or a key over the kind's
//     limit is a [*sortie.ValidationError], and the ring is unchanged;
//   - a key ID the ring does not hold, asked for by [Ring.Key],
//     [Ring.SetPrimary] or [Ring.Remove], is an error naming the ID and the
//     IDs held that wraps [ErrUnknownKey];
//   - the primary cannot be removed ([*sortie.ValidationError]): make
//     another key primary first, so the ring always has a primary.
//
// Rotation is: [Ring.Add] the new key everywhere, [Ring.SetPrimary] it,
// keep the old key while anything it made may still be presented, then
// [Ring.Remove] it.
//
// Users: crypto/envelope's Keyring (key-encryption keys; the local.key file
// and the KMS keys of a deployment), server/callback's Keyring (the
// callback-keys file) and server/push's webhook signing keys
// (webhook-keys.json). Their file formats are their own; the ring only
// holds what they parsed.
package keyring
