package io.sumi.budget;

import io.sumi.consumer.BatchResult;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageKeyResolver;
import io.sumi.consumer.PollClaim;
import io.sumi.consumer.exception.BatchFailedException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Runs handlers bound to a budget under it (see {@link BudgetRegistry#decorate}). The permit is
 * taken before the delegate claims the message, so a refused call touches no ledger row and
 * counts no attempt; it ends as the handler's run ended: success, failure (the handler's own
 * exception, not a later ledger error), or release when the handler did not run (a duplicate, a
 * busy key, a message without a key).
 */
final class BudgetedIdempotentExecutor implements IdempotentExecutor {

    private final IdempotentExecutor delegate;
    private final BudgetRegistry budgets;

    BudgetedIdempotentExecutor(IdempotentExecutor delegate, BudgetRegistry budgets) {
        this.delegate = delegate;
        this.budgets = budgets;
    }

    /** The registry whose budgets this executor applies. */
    public BudgetRegistry budgets() {
        return budgets;
    }

    /** The executor that runs the handlers. */
    public IdempotentExecutor delegate() {
        return delegate;
    }

    @Override
    public MessageKeyResolver keyResolver() {
        return delegate.keyResolver();
    }

    @Override
    public void close() {
        delegate.close();
    }

    /** Only handlers bound to no budget: a budgeted call takes its permit per message, before its claim. */
    @Override
    public @Nullable PollClaim claimPoll(HandlerDefinition handler, List<? extends InboundMessage> messages) {
        return handler.budget() == null ? delegate.claimPoll(handler, messages) : null;
    }

    /** What became of the handler's run. */
    private static final class Run {
        int runs;

        @Nullable
        Throwable failure;
    }

    // The scope is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    @Override
    public <T> HandlerResult<T> execute(HandlerDefinition handler, InboundMessage message, HandlerBody<T> body)
            throws Exception {
        if (handler.budget() == null) {
            return delegate.execute(handler, message, body);
        }
        BudgetPermit permit = budget(handler).acquire();
        Run run = new Run();
        try {
            HandlerResult<T> result = delegate.execute(handler, message, () -> {
                run.runs++;
                run.failure = null;
                try (BudgetPermit.Scope scope = permit.open()) {
                    return body.run();
                } catch (Exception | Error ex) {
                    run.failure = ex;
                    throw ex;
                }
            });
            end(permit, run);
            return result;
        } catch (Exception | Error ex) {
            end(permit, run);
            throw ex;
        }
    }

    /**
     * Unbudgeted handlers follow their future without blocking; a budgeted one waits for it on the
     * calling thread, inside its permit (the permit's scope and its cost are the calling thread's).
     */
    @Override
    public <T> CompletableFuture<HandlerResult<T>> executeAsync(
            HandlerDefinition handler, InboundMessage message, HandlerBody<CompletionStage<T>> body) throws Exception {
        if (handler.budget() == null) {
            return delegate.executeAsync(handler, message, body);
        }
        return IdempotentExecutor.super.executeAsync(handler, message, body);
    }

    // The scope is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    @Override
    public BatchResult executeBatch(HandlerDefinition handler, List<? extends InboundMessage> messages, BatchBody body)
            throws Exception {
        if (handler.budget() == null) {
            return delegate.executeBatch(handler, messages, body);
        }
        Budget budget = budget(handler);
        double costPerMessage = budget.config().costPerCall();
        int admitted = messages.size();
        if (costPerMessage * messages.size() > budget.config().limit() && messages.size() > 1) {
            // A batch that costs more than the whole limit would be refused forever: admit the
            // prefix that fits now; the rest is redelivered (BatchFailedException, retryable cause).
            admitted = (int) Math.max(1, Math.min(messages.size(), Math.floor(budget.remaining() / costPerMessage)));
        }
        // Reserve what the batch may spend, all or nothing: one call's cost would let a batch of
        // 500 start at 499 of 500. What does not run (duplicates, a stop) is given back below.
        BudgetPermit permit = budget.acquire(costPerMessage * admitted);
        Run run = new Run();
        BatchResult result;
        try {
            result = delegate.executeBatch(
                    handler, admitted == messages.size() ? messages : messages.subList(0, admitted), indexes -> {
                        // A batch is one call that costs cost-per-call for each message it runs; a
                        // transactional batch that runs a shorter prefix again pays for it again.
                        if (run.runs++ == 0) {
                            permit.recordCost(costPerMessage * indexes.size());
                        } else {
                            permit.addCost(costPerMessage * indexes.size());
                        }
                        run.failure = null;
                        try (BudgetPermit.Scope scope = permit.open()) {
                            body.run(indexes);
                        } catch (Exception | Error ex) {
                            run.failure = ex;
                            throw ex;
                        }
                    });
            end(permit, run);
        } catch (Exception | Error ex) {
            end(permit, run);
            throw ex;
        }
        if (admitted < messages.size()) {
            throw new BatchFailedException(
                    admitted,
                    new BudgetExhaustedException(
                            budget.name(),
                            BudgetExhaustedException.Reason.LIMIT_REACHED,
                            budget.spent(),
                            budget.config().limit(),
                            null,
                            "Budget '" + budget.name() + "' admitted " + admitted + " of a batch of " + messages.size()
                                    + " (the whole batch costs more than the limit); the rest is delivered again"));
        }
        return result;
    }

    private Budget budget(HandlerDefinition handler) {
        String name = handler.budget();
        return budgets.find(name != null ? name : "")
                .orElseThrow(() -> new IllegalStateException("The handler of consumer '"
                        + handler.consumer() + "' is bound to budget '" + name
                        + "', which is not configured (sumi.budgets." + name
                        + ".limit); budgets: " + budgets.names()));
    }

    private static void end(BudgetPermit permit, Run run) {
        if (run.runs == 0) {
            permit.release();
        } else if (run.failure != null) {
            permit.onError(run.failure);
        } else {
            permit.onSuccess();
        }
    }
}
