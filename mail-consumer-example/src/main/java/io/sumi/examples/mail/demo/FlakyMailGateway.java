package io.sumi.examples.mail.demo;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.examples.mail.MailGateway;
import io.sumi.examples.mail.MailRequest;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.mail.MailSendException;

/**
 * The demo's SMTP server, as seen by the handler: chosen keys meet an outage on their first
 * attempt ({@link IdempotencyContext#attempt()} is 1), before anything is sent; the retry succeeds.
 */
public class FlakyMailGateway implements MailGateway {

    private final MailGateway delegate;
    private final Set<String> failFirstAttempt = ConcurrentHashMap.newKeySet();
    private final AtomicInteger injected = new AtomicInteger();

    public FlakyMailGateway(MailGateway delegate) {
        this.delegate = delegate;
    }

    /** The keys whose first attempt fails from now on. */
    public void failFirstAttemptOf(Collection<String> keys) {
        failFirstAttempt.addAll(keys);
    }

    /** How many failures were injected. */
    public int injectedFailures() {
        return injected.get();
    }

    @Override
    public void send(MailRequest mail, String idempotencyKey) {
        if (failFirstAttempt.contains(idempotencyKey) && IdempotencyContext.current().attempt() == 1) {
            injected.incrementAndGet();
            throw new MailSendException("Simulated SMTP outage (demo): first attempt of key " + idempotencyKey + " failed");
        }
        delegate.send(mail, idempotencyKey);
    }
}
