"""The GPUs the bot knows: :mod:`.gpus` (families and how DCGM, GPU Feature Discovery, clouds and
people name them; how a MIG slice or a shared replica counts against a whole GPU), :mod:`.specs`
(NVIDIA datasheet figures: memory, tensor throughput, bandwidth), :mod:`.mig` (the MIG profile
table per GPU variant) and :mod:`.mig_names` (MIG names in every writer's form, one parser). Pure data and lookups."""
