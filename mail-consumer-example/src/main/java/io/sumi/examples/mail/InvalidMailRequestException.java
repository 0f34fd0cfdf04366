package io.sumi.examples.mail;

/**
 * A payload that is no mail request. Not retryable: the error handler dead-letters it at once.
 */
public class InvalidMailRequestException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public InvalidMailRequestException(String message) {
        super(message);
    }

    public InvalidMailRequestException(String message, Throwable cause) {
        super(message, cause);
    }
}
