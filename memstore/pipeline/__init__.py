"""The write pipeline: small steps sequenced by `add.run_add`, committed in one transaction."""
