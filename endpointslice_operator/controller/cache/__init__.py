"""What the operator knows between events: slim projections of the watched objects with their
inverted label indexes (`indexes`, `endpoints_index`, `claims`, `on_demand`), label selectors
(`selectors`), which Services are managed (`optin`) and the owner-key vocabulary every layer
shares (`owner_kinds`)."""
