package functions

// CallbackRetryWindow lets tests shorten the callback reporter's retry
// window.
var CallbackRetryWindow = &callbackRetryWindow
