// Package queuetest starts a throwaway PostgreSQL server for tests of the bot's
// queue, from Debian's postgresql package. It never skips: without the binaries a
// test fails saying what to install.
package queuetest
