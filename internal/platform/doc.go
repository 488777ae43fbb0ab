// Package platform holds what differs between the operating systems
// anamnesis runs on (Linux, macOS, Windows), so the packages above it
// stay free of build tags:
//
//   - advisory file locks: flock(2) on Unix, LockFileEx on Windows, both
//     released by the kernel when their holder dies, even when killed;
//   - renaming a new file over an old one: rename(2) on Unix; on Windows
//     MoveFileEx with MOVEFILE_REPLACE_EXISTING, retried while another
//     process holds the old file open (Go opens files without
//     FILE_SHARE_DELETE, so a reader blocks the rename for as long as it
//     reads);
//   - detaching a background process from the hook that starts it: a new
//     session on Unix, DETACHED_PROCESS|CREATE_NEW_PROCESS_GROUP (no
//     console window) on Windows;
//   - asking whether a directory may be written without writing to it,
//     and flushing every file system at once where the OS can;
//   - refusing paths that pass through a link below a store's root
//     (CheckBeneath): symlinks everywhere, and on Windows also junctions
//     and mount points, which Go reports as irregular, not as symlinks.
//
// Home and configuration directories need nothing here: os.UserHomeDir
// is $HOME on Unix and %USERPROFILE% on Windows, which is where Claude
// Code keeps ~/.claude, and $CLAUDE_CONFIG_DIR overrides it on all three.
package platform
