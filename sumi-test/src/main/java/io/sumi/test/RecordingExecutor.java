package io.sumi.test;

import io.sumi.consumer.BatchResult;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageKeyResolver;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The application's executor, watched: every call is passed on unchanged (same arguments, same
 * result, same exception), and the kit's {@link DeliveryLog} learns the consumer, the key, whether
 * the handler's body ran to its end, and how the call ended.
 */
final class RecordingExecutor implements IdempotentExecutor {

    private final IdempotentExecutor delegate;
    private final DeliveryLog log;

    RecordingExecutor(IdempotentExecutor delegate, DeliveryLog log) {
        this.delegate = delegate;
        this.log = log;
    }

    public IdempotentExecutor delegate() {
        return delegate;
    }

    @Override
    public <T> HandlerResult<T> execute(HandlerDefinition handler, InboundMessage message, HandlerBody<T> body)
            throws Exception {
        String consumer = handler.consumer();
        String key = keyOf(handler, message);
        DeliveryFrame frame = DeliveryFrame.current();
        log.guarded(frame == null ? null : frame.listener(), consumer);
        if (frame != null) {
            frame.guardedBy(consumer, key);
        }
        try {
            HandlerResult<T> result = delegate.execute(handler, message, () -> {
                T value = body.run();
                log.handlerRan(
                        consumer,
                        IdempotencyContext.find().map(IdempotencyContext::key).orElse(key));
                return value;
            });
            log.outcome(
                    consumer,
                    key,
                    result.outcome() == MessageOutcome.DUPLICATE
                            ? DeliveryOutcome.DUPLICATE
                            : DeliveryOutcome.PROCESSED);
            return result;
        } catch (Exception | Error ex) {
            log.outcome(consumer, key, outcomeOf(ex));
            throw ex;
        }
    }

    @Override
    public BatchResult executeBatch(HandlerDefinition handler, List<? extends InboundMessage> messages, BatchBody body)
            throws Exception {
        String consumer = handler.consumer();
        List<String> keys = new ArrayList<>(messages.size());
        for (InboundMessage message : messages) {
            keys.add(keyOf(handler, message));
        }
        DeliveryFrame frame = DeliveryFrame.current();
        log.guarded(frame == null ? null : frame.listener(), consumer);
        List<Integer> ran = new ArrayList<>();
        try {
            BatchResult result = delegate.executeBatch(handler, messages, indexes -> {
                body.run(indexes);
                synchronized (ran) {
                    ran.clear();
                    ran.addAll(indexes);
                }
            });
            for (int i = 0; i < keys.size(); i++) {
                boolean run = ran.contains(i);
                if (run) {
                    log.handlerRan(consumer, keys.get(i));
                }
                log.outcome(consumer, keys.get(i), run ? DeliveryOutcome.PROCESSED : DeliveryOutcome.DUPLICATE);
            }
            return result;
        } catch (BatchFailedException ex) {
            if (ex.index() >= 0 && ex.index() < keys.size()) {
                Throwable cause = ex.getCause() != null ? ex.getCause() : ex;
                log.outcome(consumer, keys.get(ex.index()), outcomeOf(cause));
            }
            throw ex;
        } catch (Exception | Error ex) {
            for (String key : keys) {
                log.outcome(consumer, key, outcomeOf(ex));
            }
            throw ex;
        }
    }

    @Override
    public MessageKeyResolver keyResolver() {
        return delegate.keyResolver();
    }

    private String keyOf(HandlerDefinition handler, InboundMessage message) {
        try {
            return delegate.keyResolver().resolve(handler, message);
        } catch (RuntimeException ex) {
            DeliveryFrame frame = DeliveryFrame.current();
            return frame != null ? frame.key() : "<no key>";
        }
    }

    static DeliveryOutcome outcomeOf(@Nullable Throwable failure) {
        if (failure instanceof MessageBusyException) {
            return DeliveryOutcome.BUSY;
        }
        if (failure instanceof ReconciliationRequiredException) {
            return DeliveryOutcome.RECONCILE;
        }
        if (failure instanceof IdempotencyException) {
            return DeliveryOutcome.REJECTED;
        }
        return DeliveryOutcome.FAILED;
    }
}
