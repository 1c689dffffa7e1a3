package controller

import (
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// ownerName is how this master names itself on the StorageClasses it
// publishes into.
func (c *controller) ownerName() string {
	return c.opts.Jobs.Namespace + "/" + c.opts.ProvisionerName
}

// classOwnedElsewhere reports whether another installation claimed a
// class, from the cache.
func (c *controller) classOwnedElsewhere(class string) bool {
	sc, err := c.scLister.Get(class)
	if err != nil {
		return false
	}
	owner := sc.Annotations[jobs.AnnClassOwner]
	return owner != "" && owner != c.ownerName()
}
