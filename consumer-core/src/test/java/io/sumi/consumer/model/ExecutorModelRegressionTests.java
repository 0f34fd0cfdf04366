package io.sumi.consumer.model;

import static io.sumi.consumer.model.ModelConfig.config;
import static io.sumi.consumer.model.Step.batch;
import static io.sumi.consumer.model.Step.deliver;
import static io.sumi.consumer.model.Step.outer;
import static io.sumi.consumer.model.Step.overtaken;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.model.Step.BatchFault;
import io.sumi.consumer.model.Step.Fault;
import io.sumi.consumer.model.Step.TransactionKind;
import io.sumi.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Counterexamples the model-based properties ({@link ExecutorModelProperties}) found and shrank,
 * kept as plain tests on every database. Each comment gives the shrunk sequence as the harness printed
 * it, what went wrong, and the item of issue 8 it is.
 */
class ExecutorModelRegressionTests {

    private static final IdempotencyMode LEASE = IdempotencyMode.LEASE;
    private static final IdempotencyMode TRANSACTIONAL = IdempotencyMode.TRANSACTIONAL;

    /*
     * Issue 8 item 2. config(TRANSACTIONAL, 1, false, false, false):
     *   outer(0, LEDGER, false, false, List.of(deliver(0, 0, NONE), batch(0, List.of(0, 1), -1, FAIL_WHOLE)))
     * Inside one listener transaction k0 is claimed, then the batch's claim of k0 answers DUPLICATE
     * from the transaction's own uncommitted row, and the front cache remembers it. The batch fails,
     * the transaction rolls back, and the redelivery of k0 is a DUPLICATE from the cache: acked with
     * no ledger row, its effect never committed.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void theCacheDoesNotRememberADuplicateOfTheListenersOwnUncommittedRow(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(TRANSACTIONAL, 1, false, false, false),
                List.of(outer(
                        0,
                        TransactionKind.LEDGER,
                        false,
                        false,
                        List.of(deliver(0, 0, Fault.NONE), batch(0, List.of(0, 1), -1, BatchFault.FAIL_WHOLE)))));
    }

    /*
     * Issue 8 item 3. config(TRANSACTIONAL, 0, false, true, false):
     *   deliver(2, 0, FAIL_BEFORE_EFFECT)
     * Instance 2's executor was given the transaction manager of another resource. The ledger row
     * was inserted COMPLETED on a connection of its own and committed at once; the handler failed,
     * and the redelivery was a DUPLICATE: acked with no effect committed (a lost message).
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aFailedHandlerOnAnotherResourcesTransactionManagerLeavesNoCompletedRow(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(TRANSACTIONAL, 0, false, true, false),
                List.of(deliver(2, 0, Fault.FAIL_BEFORE_EFFECT)));
    }

    /*
     * Issue 8 item 3, batch form. config(TRANSACTIONAL, 0, false, true, false):
     *   batch(2, List.of(0), 0, NONE)
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aFailedBatchOnAnotherResourcesTransactionManagerLeavesNoCompletedRow(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(TRANSACTIONAL, 0, false, true, false),
                List.of(batch(2, List.of(0), 0, BatchFault.NONE)));
    }

    /*
     * Issue 8 item 6. config(TRANSACTIONAL, 0, false, false, false):
     *   outer(0, FOREIGN, false, false, List.of(batch(0, List.of(0, 1), 1, NONE)))
     * A transaction of another resource (like the container's Kafka transaction) is active, but the
     * ledger's DataSource takes no part in it: the batch's passes run in transactions of their own.
     * Message 1 fails: message 0 must be completed and the batch must stop at index 1. The executor
     * took the batch for "joined" and reported index 0 with nothing done (message 0 would go to
     * the DLT with the failing message's cause).
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aBatchInAnotherResourcesTransactionStopsAtTheFailingMessage(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(TRANSACTIONAL, 0, false, false, false),
                List.of(outer(
                        0,
                        TransactionKind.FOREIGN,
                        false,
                        false,
                        List.of(batch(0, List.of(0, 1), 1, BatchFault.NONE)))));
    }

    /*
     * Issue 8 item 7. config(LEASE, 0, false, false, false):
     *   batch(0, List.of(0, 1), 1, STORE_ERROR_AT_COMPLETE)
     * Message 1 fails; completing message 0 fails in the ledger; the release of message 1 never
     * ran, so k1 stayed leased by a live instance: every redelivery BUSY for the whole lease.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aFailingCompleteStillReleasesTheBatchsFailedMessages(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0, false, false, false),
                List.of(batch(0, List.of(0, 1), 1, BatchFault.STORE_ERROR_AT_COMPLETE)));
    }

    /*
     * Issue 8 item 7. config(LEASE, 0, false, false, false):
     *   batch(0, List.of(3), -1, CRASH_IN_HANDLER)
     *   batch(0, List.of(0, 3, 1), -1, STORE_ERROR_AT_RELEASE)
     * k3 is held by a dead instance, so the second batch stops at index 1; the release of k1
     * (claimed after the stop) fails, the exception leaves the executor, and k0, claimed and never
     * run, stays leased: BUSY for the whole lease.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aFailingReleaseAfterAStopStillGivesBackTheClaimsBeforeIt(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0, false, false, false),
                List.of(
                        batch(0, List.of(3), -1, BatchFault.CRASH_IN_HANDLER),
                        batch(0, List.of(0, 3, 1), -1, BatchFault.STORE_ERROR_AT_RELEASE)));
    }

    /*
     * Issue 8 item 10. config(LEASE, 0, false, false, true):
     *   deliver(0, 0, CRASH_IN_HANDLER)
     *   deliver(1, 0, NONE)
     * Instance 0 dies holding k0 (a live lease). Instance 1, whose clock runs a lease and a minute
     * ahead, takes the live lease over and runs the handler again instead of answering BUSY.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anInstanceWhoseClockRunsAheadDoesNotTakeOverALiveLease(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0, false, false, true),
                List.of(deliver(0, 0, Fault.CRASH_IN_HANDLER), deliver(1, 0, Fault.NONE)));
    }

    /*
     * Issue 8 item 10. config(LEASE, 0, false, false, true):
     *   deliver(1, 0, FAIL_AFTER_EFFECT)
     * Instance 1, whose clock runs ahead, releases k0 after its handler failed: the release ends
     * the lease at instance 1's "now", which is still in the future for everyone else, so the
     * redelivery on another instance is BUSY instead of claiming it.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aReleaseByAnInstanceWhoseClockRunsAheadFreesTheKeyForEveryone(TestDatabase database) {
        ExecutorModel.check(
                database, config(LEASE, 0, false, false, true), List.of(deliver(1, 0, Fault.FAIL_AFTER_EFFECT)));
    }

    /*
     * NEW (found after the merge of the issue 8 fixes). config(LEASE, 0, false, false, false):
     *   batch(0, List.of(0, 1), 1, STORE_DOWN_AT_COMPLETE)
     * Message 1 fails; completing message 0 fails twice (the executor tries once more); the
     * executor still threw the handler's BatchFailedException(1), which tells the binder that
     * message 0 is done: it was acked while its ledger row was not COMPLETED (released, so a later
     * copy would run it again, and nothing records that it ran).
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aBatchWhoseCompletionFailsAcksNothingBeforeTheStop(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0, false, false, false),
                List.of(batch(0, List.of(0, 1), 1, BatchFault.STORE_DOWN_AT_COMPLETE)));
    }

    /*
     * NEW-1 (found by the model, decided by the lead). config(LEASE, 0, false, false, false):
     *   overtaken(0, 0, FAIL_AFTER_EFFECT)
     * Instance 0's handler outlives its lease; instance 1 takes the message over and its handler
     * fails (its claim released). Instance 0's completion finds the claim gone and the executor
     * returned PROCESSED: acked while the ledger row is IN_PROGRESS, nothing records that it ran.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aHandlerThatLostItsLeaseToATakerThatFailedIsNotAcked(TestDatabase database) {
        ExecutorModel.check(
                database, config(LEASE, 0, false, false, false), List.of(overtaken(0, 0, Fault.FAIL_AFTER_EFFECT)));
    }

    /*
     * NEW-1. config(LEASE, 0, false, false, false):
     *   overtaken(0, 0, CRASH_IN_HANDLER)
     * As above, but the taker dies inside its handler: its claim stays leased, the slow copy must
     * not be acked (it comes again: BUSY until the taker's lease ends, then a takeover).
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aHandlerThatLostItsLeaseToATakerThatDiedIsNotAcked(TestDatabase database) {
        ExecutorModel.check(
                database, config(LEASE, 0, false, false, false), List.of(overtaken(0, 0, Fault.CRASH_IN_HANDLER)));
    }

    /*
     * Issue 12 (the poll-level claim), a fixed sequence: instance 1 dies holding k1; instance 0's
     * poll runs k0 and k2, skips the second k0 as a duplicate, stops at the busy k1 (k3 claimed
     * with the poll, released unrun); instance 2's poll fails at its first record; instance 0's
     * next poll dies before its completions are written (nothing acked, its claims expire); the
     * end delivers everything again. Every ack is checked against a COMPLETED row.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aPollRunsEachKeyOnceAndAcksOnlyWhatIsCompleted(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0b001, false, false, false),
                List.of(
                        deliver(1, 1, Step.Fault.CRASH_IN_HANDLER),
                        Step.poll(0, List.of(0, 2, 0, 1, 3), -1, false),
                        Step.poll(2, List.of(3, 3, 2), 0, false),
                        Step.poll(0, List.of(3, 2, 3), -1, true),
                        Step.expireLeases(),
                        Step.poll(1, List.of(1, 3, 0, 1), -1, false)));
    }

    /*
     * Issue 19, A1: claims released without the handler running. k1 ran once and failed (a real
     * attempt); a poll blocked behind the busy k0 (instance 1 died holding it) claims k1, k2 and k3
     * three times and gives them back unrun each time: no attempt counted (k2 and k3 have no row,
     * k1 keeps its one attempt), and k2 and k3 then run even under a 1 ms reconcile-after window.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void claimsGivenBackUnrunCountNoAttemptAndNeverMakeAKeyUncertain(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0b001, false, false, false),
                List.of(
                        deliver(1, 0, Step.Fault.CRASH_IN_HANDLER),
                        deliver(0, 1, Step.Fault.FAIL_AFTER_EFFECT),
                        Step.poll(0, List.of(0, 1, 2, 3), -1, false),
                        Step.unrun(0, List.of(0, 1, 2, 3), 3),
                        Step.unrun(2, List.of(1, 2, 3, 2), 1)));
    }

    /*
     * Issue 19 item A3 (the "nack" step). config(LEASE, 0, false, false, false) and the same in
     * TRANSACTIONAL mode, with the front cache on instance 0:
     *   deliver(0, 0, NACK), deliver(0, 0, NONE)
     * The handler nacked and returned: before NotDoneSignal the executor completed the row, and the
     * redelivery the nack asked for was a DUPLICATE (acked, never run again). Now the first call
     * returns NOT_DONE with the row released (rolled back, with its effect row, in transactional
     * mode) and nothing acked, and the redelivery runs the handler.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aNackedDeliveryIsNotCompletedAndItsRedeliveryRunsIt(TestDatabase database) {
        for (IdempotencyMode mode : List.of(LEASE, TRANSACTIONAL)) {
            ExecutorModel.check(
                    database,
                    config(mode, 1, false, false, false),
                    List.of(deliver(0, 0, Fault.NACK), deliver(0, 0, Fault.NONE)));
        }
    }

    /*
     * Issue 19 part B, the async step with other steps between its start and its end. An async
     * handler's future pending on instance 0 holds k0 (BUSY for instance 2); its lease lapses, instance 1
     * takes k0 over and fails: the stale success finds its claim gone and the row not COMPLETED, so
     * it is a retryable BUSY, not acked, and changes nothing of the row. k1's stale failure, after
     * its taker completed it, releases nothing. k2's claim, expired, is taken over and given back
     * unrun by a poll (a new token): its success is stale too. k3's lease lapses with nobody taking
     * it over: the claim is still its own, and its success completes it. Instance 1 dies with k0's
     * second future pending: that future never completes, its claim lapses, and the end runs k0.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aStaleAsyncCompletionIsFencedByItsClaimToken(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0b010, false, false, false),
                List.of(
                        Step.asyncStart(0, 0, true),
                        deliver(2, 0, Fault.NONE),
                        Step.expireLeases(),
                        deliver(1, 0, Fault.FAIL_AFTER_EFFECT),
                        Step.asyncEnd(null),
                        Step.asyncStart(0, 1, false),
                        Step.expireLeases(),
                        deliver(1, 1, Fault.NONE),
                        Step.asyncEnd(null),
                        Step.asyncStart(2, 2, true),
                        Step.expireLeases(),
                        Step.unrun(1, List.of(2), 1),
                        Step.asyncEnd(null),
                        Step.asyncStart(0, 3, true),
                        Step.expireLeases(),
                        Step.asyncEnd(null),
                        Step.asyncStart(1, 0, true),
                        deliver(1, 2, Fault.CRASH_IN_HANDLER),
                        Step.asyncEnd(null)));
    }

    /*
     * Issue 19 part B, the batch nack (BatchResult.notDoneFrom). A batch handler nacks from the
     * middle (index 2): k0 and k1 are done and acked, k2 and k3 are released (rolled back, in
     * transactional mode, then k0 and k1 run again alone) and their redelivery runs them. In lease
     * mode, with k1 held by a dead instance, the batch stops at k1 before the nack: notDoneFrom 1.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aNackedBatchCompletesOnlyWhatCameBeforeTheNack(TestDatabase database) {
        for (IdempotencyMode mode : List.of(LEASE, TRANSACTIONAL)) {
            ExecutorModel.check(
                    database,
                    config(mode, 1, false, false, false),
                    List.of(
                            batch(0, List.of(0, 1, 2, 3), -1, BatchFault.NACK),
                            batch(0, List.of(2, 3, 0), -1, BatchFault.NONE)));
        }
        ExecutorModel.check(
                database,
                config(LEASE, 0, false, false, false),
                List.of(deliver(1, 1, Fault.CRASH_IN_HANDLER), batch(0, List.of(0, 1, 2, 3), -1, BatchFault.NACK)));
    }

    /*
     * Issue 19 part B, the poll nack and the claims behind it. k1 ran once and failed (one real
     * attempt). A poll runs k0, then k2 nacks (NOT_DONE, its claim released as a run attempt): the
     * poll stops there, and the claims of k1 (a take-over) and k3 (a first claim) behind it are
     * given back unrun: k1 keeps its one attempt, k3 has no row. The next poll runs them all.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aNackedPollRecordIsReleasedAndTheClaimsBehindItAreGivenBackUnrun(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0, false, false, false),
                List.of(
                        deliver(0, 1, Fault.FAIL_AFTER_EFFECT),
                        Step.poll(0, List.of(0, 2, 1, 3), 1, false, true),
                        Step.poll(1, List.of(2, 1, 3), -1, false)));
    }

    /*
     * Issue 19 A1, async form. config(LEASE, 0, false, false, false):
     *   deliver(0, 0, FAIL_BEFORE_EFFECT), reused(0, 0, true)
     * k0 ran once and failed (one real attempt, its claim released). The key comes again with
     * another payload to an asynchronous handler that rejects reused keys: the take-over's claim
     * is refused before the handler runs, but executeAsync released it as a run attempt (attempts
     * 2, the rejection as last error), where execute gives it back unrun; the next take-over past
     * the reconcile-after window would then be held for reconciliation without a second run.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anAsyncClaimRefusedForItsFingerprintCountsNoAttempt(TestDatabase database) {
        ExecutorModel.check(
                database,
                config(LEASE, 0, false, false, false),
                List.of(deliver(0, 0, Fault.FAIL_BEFORE_EFFECT), Step.reused(0, 0, true)));
    }
}
