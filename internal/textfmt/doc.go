// Package textfmt holds the small text helpers the CLI, the hooks and the
// web UI share: clipping to a width, singular or plural, the date of a
// timestamp. Each existed two or three times and had drifted (one clip
// cut inside words, one without an ellipsis, one panicked at width 0);
// one definition here keeps what a reader sees the same everywhere.
package textfmt
