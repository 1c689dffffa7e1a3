package socket

// ID identifies one socket inode. Inode numbers are reused quickly on
// Linux, so the change time is part of the identity. A socket removed and
// re-created in place is also seen as a Remove event, which forgets the old
// generation before the new one is observed.
type ID struct {
	Dev, Ino uint64
	Ctime    int64 // nanoseconds
}
