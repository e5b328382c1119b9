/**
 * A reconciler verdict row as the indexer writes it to ClickHouse: a $1 payment the chain does not
 * show (`missing`), for tests that page exception lists without running the indexer.
 */
export function missingVerdict(movementId: string, signature: string, day: string, checkedAt: string) {
  return {
    movement_id: movementId,
    signature,
    ledger_day: day,
    status: 'missing',
    ledger_amount: '1000000',
    chain_amount: '0',
    commitment: '',
    detail: '',
    checked_at: checkedAt,
  };
}
