package diffing

func (d *differ) checkLive()      {}
func (d *differ) checkImmutable() {}
func (d *differ) checkRemoved()   {}
