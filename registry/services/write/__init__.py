"""The package write: one change per write, from validation to the locked transaction.

Owns the request (`request`), the pipeline (`publish`: validate, scan, hash, claim, upload,
publish), its stages (`blobstage`, `rootchecks`, `diversion`, `content`) and the writes built
on it: the owner's edit, restore, and the two-phase upload (`edit`, `restore`, `uploads`).
"""
