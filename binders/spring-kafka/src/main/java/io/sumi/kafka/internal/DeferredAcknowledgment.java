package io.sumi.kafka.internal;

import io.sumi.consumer.NotDoneSignal;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.support.Acknowledgment;

/**
 * The {@link Acknowledgment} an {@code @IdempotentHandler} listener gets in place of the
 * container's: it keeps the handler's {@code acknowledge()} / {@code nack()} calls and passes them
 * on only once Sumi has settled the message, so that
 * <ul>
 *   <li>a {@code nack()} is not success: the body Sumi runs throws {@link NotDoneSignal} after the
 *   listener returned ({@link #checkDone}), the executor releases the claim (or rolls the
 *   transaction back) instead of completing it, and the nack then reaches the container, which
 *   seeks the record (or the batch from the index) back as it would without Sumi;</li>
 *   <li>an {@code acknowledge()} inside the handler commits nothing before the record's completion
 *   is written ({@code MANUAL_IMMEDIATE} commits inside {@code acknowledge()}): it reaches the
 *   container after the executor returned (with the poll claim, the commit itself writes the
 *   poll's kept completions first);</li>
 *   <li>when the handler throws, or Sumi's completion fails, nothing is passed on: the container's
 *   error handler decides, as for any failure.</li>
 * </ul>
 * Calls made after Sumi settled the message (an acknowledgement handed to another thread, with
 * out-of-order commits) go straight to the container's acknowledgement.
 *
 * <p>Batch indexes: the listener sees the batch without its duplicates; {@code nack(index)} and
 * {@code acknowledge(index)} are translated to the container's batch through the indexes of the
 * run ({@link #view}). Used by the listener's thread (Spring Kafka requires {@code nack()} on the
 * consumer thread); {@code settled} is read across threads only for calls after the settlement.
 */
public final class DeferredAcknowledgment implements Acknowledgment {

    private final Acknowledgment delegate;
    private @Nullable List<Integer> view;
    private boolean acknowledged;
    private int acknowledgedUpTo = -1;
    private int nackIndex = Integer.MAX_VALUE;
    private Duration nackSleep = Duration.ZERO;
    private boolean nackedInRun;
    private volatile boolean settled;

    public DeferredAcknowledgment(Acknowledgment delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    /** Replaces every {@link Acknowledgment} of {@code args} with a deferring one; the first such wrapper, or {@code null}. */
    public static @Nullable DeferredAcknowledgment install(Object[] args) {
        DeferredAcknowledgment installed = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof Acknowledgment ack) {
                DeferredAcknowledgment deferred = new DeferredAcknowledgment(ack);
                args[i] = deferred;
                if (installed == null) {
                    installed = deferred;
                }
            }
        }
        return installed;
    }

    /**
     * A batch run of the listener starts: it sees the batch's records at {@code indexes}
     * (ascending indexes into the container's batch).
     */
    public void view(List<Integer> indexes) {
        this.view = indexes;
        this.nackedInRun = false;
    }

    @Override
    public void acknowledge() {
        if (settled) {
            delegate.acknowledge();
            return;
        }
        acknowledged = true;
    }

    @Override
    public void acknowledge(int index) {
        if (settled) {
            delegate.acknowledge(index);
            return;
        }
        acknowledgedUpTo = Math.max(acknowledgedUpTo, translate(index));
    }

    @Override
    public void nack(Duration sleep) {
        if (settled) {
            delegate.nack(sleep);
            return;
        }
        nackedInRun = true;
        nackSleep = sleep;
    }

    @Override
    public void nack(int index, Duration sleep) {
        if (settled) {
            delegate.nack(index, sleep);
            return;
        }
        nackedInRun = true;
        nackIndex = Math.min(nackIndex, translate(index));
        nackSleep = sleep;
    }

    @Override
    public boolean isOutOfOrderCommit() {
        return delegate.isOutOfOrderCommit();
    }

    private int translate(int index) {
        List<Integer> indexes = view;
        if (indexes == null) {
            return index;
        }
        if (index < 0 || index >= indexes.size()) {
            throw new IllegalArgumentException(
                    "index " + index + " is out of the " + indexes.size() + " records the listener was given");
        }
        return indexes.get(index);
    }

    /**
     * Throws {@link NotDoneSignal} if the listener run that just returned nacked: for a record
     * with {@code value}, for a batch run from the (translated) index.
     */
    public void checkDone(@Nullable Object value) throws NotDoneSignal {
        if (!nackedInRun) {
            return;
        }
        nackedInRun = false;
        throw nackIndex == Integer.MAX_VALUE ? NotDoneSignal.of(value) : NotDoneSignal.from(nackIndex);
    }

    /**
     * Sumi settled a record without an exception: passes the kept calls on to the container. A
     * nack ({@code notDone}: the executor released or rolled the record back) wins over an
     * acknowledgement.
     */
    public void settleRecord(boolean notDone) {
        settled = true;
        if (notDone) {
            delegate.nack(nackSleep);
        } else if (acknowledged) {
            delegate.acknowledge();
        }
    }

    /**
     * Sumi settled a batch without an exception: {@code notDoneFrom} is where the executor says the
     * batch is not done (the listener's nack index, or an earlier one a later run of a
     * transactional batch nacked), -1 if it is all done. The container's {@code nack(index)}
     * acknowledges the records before the index itself.
     */
    public void settleBatch(int notDoneFrom) {
        settled = true;
        if (notDoneFrom >= 0) {
            delegate.nack(notDoneFrom, nackSleep);
        } else if (acknowledged) {
            delegate.acknowledge();
        } else if (acknowledgedUpTo >= 0) {
            delegate.acknowledge(acknowledgedUpTo);
        }
    }

    /** Sumi's call ended with an exception: nothing is passed on; later calls go to the container. */
    public void abandon() {
        settled = true;
    }
}
