package io.sumi.examples.mail.demo;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.examples.mail.MailGateway;
import io.sumi.examples.mail.MailRequest;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.mail.MailSendException;

/**
 * The demo's SMTP server, as seen by the handler: mails to the domain {@value #GREYLISTING_DOMAIN}
 * meet greylisting, that is a temporary refusal of the first attempt ({@link IdempotencyContext#attempt()}
 * is 1), before anything is sent; the retry succeeds.
 */
public class FlakyMailGateway implements MailGateway {

    /** The domain whose mail server greylists the first attempt of every mail. */
    public static final String GREYLISTING_DOMAIN = "greylisted.example.org";

    private final MailGateway delegate;
    private final AtomicInteger injected = new AtomicInteger();

    public FlakyMailGateway(MailGateway delegate) {
        this.delegate = delegate;
    }

    /** How many failures were injected. */
    public int injectedFailures() {
        return injected.get();
    }

    @Override
    public void send(MailRequest mail, String idempotencyKey) {
        if (mail.to().toLowerCase(Locale.ROOT).endsWith("@" + GREYLISTING_DOMAIN)
                && IdempotencyContext.current().attempt() == 1) {
            injected.incrementAndGet();
            throw new MailSendException("Simulated greylisting (demo): 451 4.7.1 " + mail.to()
                    + " greylisted, try again later (first attempt of key " + idempotencyKey + ")");
        }
        delegate.send(mail, idempotencyKey);
    }
}
