"""The read path: filters, candidate generation (semantic ∪ keyword ∪ entity), fusion, explain."""
