"""Live AWS prices: :mod:`.prices` (the fetch, through boto3: the Price List Query API for
on-demand, EC2's spot price history for spot, cached in the store) and :mod:`.price_list`
(their answers read into prices)."""
